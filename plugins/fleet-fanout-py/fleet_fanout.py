"""fleet-fanout (Python): the Python port of ``plugins/fleet-fanout``, one
plugin acting on several clusters from one daemon
(:mod:`herald_sdk.cluster`, world 0.6.0).

A ConfigMap labelled ``herald.dev/fan-out: "true"`` in any cluster the
plugin runs on is copied, with its data, into the same namespace and name in
every other one of its clusters, labelled ``herald.dev/fanned-from:
<cluster>`` (and without the fan-out label, so a copy is never fanned out
again); a change is copied again, and a delete deletes the copies that came
from that cluster. Each copy is a server-side apply with the plugin's field
manager. One cluster refusing a copy does not keep it from the others; the
call then fails, so the host retries it.
"""

from __future__ import annotations

from typing import Dict, List

import herald_sdk
from herald_sdk import HandlerError, Handler, Manifest, Subscription, Verb, WriteRule, cluster, kube, log
from herald_sdk.kinds import ConfigMap

#: The label that asks for a ConfigMap to be copied everywhere.
FAN_OUT = "herald.dev/fan-out"
#: The label a copy carries: the cluster it came from.
FANNED_FROM = "herald.dev/fanned-from"


def copy_of(source: ConfigMap, origin: str) -> Dict:
    """The copy of ``source`` made in another cluster: its data, labelled
    with the cluster it came from."""
    labels = {k: v for k, v in source.labels.items() if k != FAN_OUT}
    labels[FANNED_FROM] = origin
    copy = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": source.name, "namespace": source.namespace, "labels": labels}}
    for field in ("data", "binaryData"):
        if source.get(field):
            copy[field] = source[field]
    return copy


def others(origin: str) -> List[str]:
    """Every cluster of the plugin's but ``origin``."""
    return [name for name in cluster.names() if name != origin]


class FleetFanout(Handler):
    """Copies fan-out ConfigMaps across the plugin's clusters."""

    @classmethod
    def manifest(cls) -> Manifest:
        return (Manifest("fleet-fanout-py", "0.1.0")
                .subscribe(Subscription.to(ConfigMap).labels(f"{FAN_OUT}=true").coalesced())
                .write(WriteRule.to(ConfigMap).verbs(Verb.GET, Verb.APPLY, Verb.DELETE).all_namespaces()))

    def on_add(self, event) -> None:
        self.fan_out(event.object_as(ConfigMap))

    def on_update(self, event) -> None:
        self.fan_out(ConfigMap(event.new))

    def on_delete(self, event) -> None:
        source = event.object_as(ConfigMap)
        origin = cluster.current()
        for other in others(origin):
            with cluster.within(other):
                configmaps = kube.Api(ConfigMap, namespace=source.namespace)
                try:
                    copy = configmaps.get(source.name)
                except kube.NotFound:
                    continue
                if copy.labels.get(FANNED_FROM) == origin:
                    configmaps.delete(source.name)
                    log.info(f"deleted {source.key} in {other}: gone from {origin}")

    @staticmethod
    def fan_out(source: ConfigMap) -> None:
        origin = cluster.current()
        copy = copy_of(source, origin)
        failed = []
        for other in others(origin):
            try:
                with cluster.within(other):
                    kube.Api(ConfigMap, namespace=source.namespace).apply(source.name, copy, force=True)
            except kube.KubeError as error:
                failed.append(f"{other}: {error}")
                continue
            log.info(f"copied {source.key} from {origin} to {other}")
        if failed:
            raise HandlerError(f"copying {source.key} from {origin}: {'; '.join(failed)}")


herald_sdk.export_plugin(FleetFanout)
