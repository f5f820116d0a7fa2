"""reloader (Python): the Python port of ``plugins/go-reloader``, written
with the SDK's reconcile API (:mod:`herald_sdk.reconcile`), itself a port
of the core of Stakater Reloader: a Deployment annotated to follow
ConfigMaps or Secrets is rolled when their data changes, once per change,
and never for anything else.

A Deployment opts in with Reloader's annotations::

    configmap.reloader.stakater.com/reload: "settings,flags"  # these ConfigMaps
    secret.reloader.stakater.com/reload: "db-credentials"     # these Secrets
    reloader.stakater.com/auto: "true"                        # every one its pods reference

It reconciles Deployments, and maps a change of a ConfigMap or Secret to
the Deployments of its namespace that follow it. The reconcile hashes the
data of everything the Deployment follows (the same hash as the Go port's,
so either may take over from the other without a rollout); the hash is
recorded on the Deployment the first time (no rollout), and when it
differs later it is written to the pod template's annotations too, which
rolls the Deployment. Both are one server-side apply with the plugin's
field manager.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Dict, List, Optional, Tuple

import herald_sdk
from herald_sdk import Manifest, Verb, WriteRule, cache, kube, log, metrics
from herald_sdk.kinds import ConfigMap, Deployment, KubeObject, Secret
from herald_sdk.metrics import Metric
from herald_sdk.reconcile import Action, Controller, Reconciler, Request

RELOAD_CONFIG_MAPS = "configmap.reloader.stakater.com/reload"
RELOAD_SECRETS = "secret.reloader.stakater.com/reload"
RELOAD_AUTO = "reloader.stakater.com/auto"
#: The hash of the followed data: on the Deployment once seen, on its pod
#: template once rolled for a change.
HASH_ANNOTATION = "reloader.herald.example.com/hash"

Source = Tuple[str, str]  # (ConfigMap or Secret, name)


def _names(text: str) -> List[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def referenced(pod_spec: Dict) -> List[Source]:
    """Every ConfigMap and Secret a pod spec mounts or reads its
    environment from."""
    out: List[Source] = []

    def add(kind: str, name: Optional[str]) -> None:
        if name:
            out.append((kind, name))

    for volume in pod_spec.get("volumes") or []:
        add("ConfigMap", (volume.get("configMap") or {}).get("name"))
        add("Secret", (volume.get("secret") or {}).get("secretName"))
        for projected in (volume.get("projected") or {}).get("sources") or []:
            add("ConfigMap", (projected.get("configMap") or {}).get("name"))
            add("Secret", (projected.get("secret") or {}).get("name"))
    for container in (pod_spec.get("initContainers") or []) + (pod_spec.get("containers") or []):
        for env_from in container.get("envFrom") or []:
            add("ConfigMap", (env_from.get("configMapRef") or {}).get("name"))
            add("Secret", (env_from.get("secretRef") or {}).get("name"))
        for env in container.get("env") or []:
            value_from = env.get("valueFrom") or {}
            add("ConfigMap", (value_from.get("configMapKeyRef") or {}).get("name"))
            add("Secret", (value_from.get("secretKeyRef") or {}).get("name"))
    return out


def followed(deployment: KubeObject) -> List[Source]:
    """What ``deployment`` follows, sorted, each once."""
    annotations = deployment.annotations
    out = [("ConfigMap", name) for name in _names(annotations.get(RELOAD_CONFIG_MAPS, ""))]
    out += [("Secret", name) for name in _names(annotations.get(RELOAD_SECRETS, ""))]
    if annotations.get(RELOAD_AUTO) == "true":
        template = deployment.spec.get("template") or {}
        out += referenced(template.get("spec") or {})
    return sorted(set(out), key=lambda source: f"{source[0]}/{source[1]}")


def _data(kind: str, obj: KubeObject) -> Dict[str, bytes]:
    """The object's data as bytes: a ConfigMap's ``data`` and
    ``binaryData``, a Secret's ``data`` (both base64 on the wire)."""
    data = {key: base64.b64decode(value) for key, value in (obj.get("binaryData") or {}).items()}
    if kind == "Secret":
        data.update({key: base64.b64decode(value) for key, value in (obj.get("data") or {}).items()})
    else:
        data.update({key: value.encode() for key, value in (obj.get("data") or {}).items()})
    return data


def data_hash(namespace: str, sources: List[Source]) -> Tuple[str, Optional[Source]]:
    """The hash of the sources' data, in order; and the first source not
    (yet) in the cache, if any."""
    digest = hashlib.sha256()
    for kind, name in sources:
        obj = cache.get(ConfigMap if kind == "ConfigMap" else Secret, namespace, name)
        if obj is None:
            return "", (kind, name)
        data = _data(kind, obj)
        # Length-prefixed, so that no two different contents hash alike.
        digest.update(f"{len(kind)}:{kind}{len(name.encode())}:{name}{len(data)}\n".encode())
        for key in sorted(data):
            digest.update(f"{len(key.encode())}:{key}{len(data[key])}:".encode())
            digest.update(data[key])
    return digest.hexdigest(), None


def count(outcome: str) -> None:
    metrics.counter("reconciles_total").labels(outcome).inc()


def followers_of(kind: str):
    """Maps a ConfigMap or Secret to the cached Deployments of its namespace
    that follow it (a scan of the namespace's Deployments, as Reloader's:
    what they follow is a list inside an annotation, which no index can
    file)."""

    def followers(obj: KubeObject) -> List[Request]:
        namespace = obj.namespace
        return [Request(namespace, deployment.name)
                for deployment in cache.list(Deployment, namespace)
                if (kind, obj.name) in followed(deployment)]

    return followers


class Reloader(Reconciler):
    """Records the followed data's hash on a Deployment the first time, and
    rolls it (the hash on its pod template) when the hash changes."""

    @classmethod
    def controller(cls) -> Controller:
        manifest = (Manifest("reloader-py", "0.1.0")
                    .write(WriteRule.to(Deployment).verbs(Verb.APPLY).all_namespaces())
                    .metric(Metric.counter("reconciles_total", "Deployment reconciles by outcome")
                            .labels("outcome")))
        return (Controller(Deployment, manifest)
                .watches(ConfigMap, followers_of("ConfigMap"))
                .watches(Secret, followers_of("Secret")))

    def reconcile(self, request: Request, deployment: Optional[KubeObject]) -> Action:
        if deployment is None or deployment.deletion_timestamp is not None:
            return Action.await_change()
        sources = followed(deployment)
        if not sources:
            return Action.await_change()
        digest, missing = data_hash(request.namespace, sources)
        if missing is not None:
            # Its creation maps here again; Reloader, too, waits for it.
            log.info("waiting for a followed object", deployment=str(request),
                     kind=missing[0], name=missing[1])
            count("waiting")
            return Action.await_change()
        recorded = deployment.annotations.get(HASH_ANNOTATION)
        if recorded == digest:
            count("unchanged")
            return Action.await_change()
        template_metadata = (deployment.spec.get("template") or {}).get("metadata") or {}
        template = (template_metadata.get("annotations") or {}).get(HASH_ANNOTATION)
        outcome = "rolled" if recorded else "recorded"
        if recorded:
            template = digest
        apply(request, digest, template)
        if outcome == "rolled":
            log.info("rolled for changed data", deployment=str(request), hash=digest[:12])
        else:
            log.info("following", deployment=str(request), objects=len(sources), hash=digest[:12])
        count(outcome)
        return Action.await_change()


def apply(request: Request, digest: str, template: Optional[str]) -> None:
    """Writes the Deployment's hash, and the pod template's (kept as it is
    unless rolling: a field the plugin's manager owns and leaves out of an
    apply is removed, which would roll the Deployment)."""
    patch: Dict = {"metadata": {"annotations": {HASH_ANNOTATION: digest}}}
    if template:
        patch["spec"] = {"template": {"metadata": {"annotations": {HASH_ANNOTATION: template}}}}
    kube.Api(Deployment, namespace=request.namespace).apply(request.name, patch, force=True)


herald_sdk.export_plugin(Reloader)
