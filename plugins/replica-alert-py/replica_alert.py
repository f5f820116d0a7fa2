"""replica-alert (Python): a small controller that watches Deployments and,
while one has fewer available replicas than it asks for, says so everywhere
a controller can:

- **a ConfigMap write**: server-side applies ``replica-alert-<deployment>``
  in the Deployment's namespace (owned by the Deployment, so Kubernetes
  deletes it with it) with the Deployment's state: ``degraded`` or ``ok``,
  desired and available replicas;
- **an Event**: Warning ``ReplicasUnavailable`` on the Deployment when it
  becomes degraded, Normal ``ReplicasAvailable`` when it recovers;
- **a metric**: ``herald_plugin_alerts_total{namespace}`` counts the alerts;
- **an HTTP POST**: a JSON message to the configured webhook on each alert
  and recovery;
- **a requeue**: while degraded, it asks for the Deployment again in 30 s, a
  level-triggered re-check that refreshes the ConfigMap even when no event
  comes.

The alert and the recovery are sent once per episode: the episode lives in
the plugin instance, so after an instance rebuild an ongoing episode is
alerted once more (at least once, never silently dropped). A webhook that
fails (an error, or a status other than 2xx) fails the call: the host
retries the Deployment with backoff, and the retry sends what is pending.

Configuration: ``{"webhookUrl": "https://hooks.example.com/replicas"}``
(optional: without it, alerts are logged, recorded and counted).
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import herald_sdk
from herald_sdk import (EVENTS, HTTP, Event, HandlerError, Handler, Manifest, Subscription, Update, Verb,
                        WriteRule, config, deadline, events, http, kube, log, metrics, workqueue)
from herald_sdk.kinds import ConfigMap, Deployment
from herald_sdk.metrics import Metric

#: The counter of alerts sent.
ALERTS = "alerts_total"
#: How long to wait before looking at a degraded Deployment again, in seconds.
RECHECK_SECONDS = 30
#: The least time left in the call for a webhook request to be worth sending, in milliseconds.
WEBHOOK_MIN_MS = 100


def settings() -> Dict[str, Any]:
    """The configuration, checked: ``webhookUrl`` (optional) and nothing else."""
    raw = config.get() or {}
    if not isinstance(raw, dict) or set(raw) - {"webhookUrl"}:
        raise HandlerError("the plugin configuration: expected {\"webhookUrl\": \"https://...\"} at most")
    url = raw.get("webhookUrl")
    if url is not None and not isinstance(url, str):
        raise HandlerError("the plugin configuration: webhookUrl must be a string")
    return raw


def status_config_map(deployment: Deployment, state: str) -> Dict[str, Any]:
    """The ConfigMap applied for ``deployment``: its state and replica counts,
    owned by the Deployment."""
    return {
        "metadata": {
            "labels": {"app.kubernetes.io/managed-by": "herald-replica-alert"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment.name,
                                 "uid": deployment.uid, "controller": True}],
        },
        "data": {
            "deployment": deployment.name,
            "state": state,
            "desired": str(deployment.replicas),
            "available": str(available(deployment)),
        },
    }


def available(deployment: Deployment) -> int:
    """``status.availableReplicas``, or 0."""
    return deployment.status.get("availableReplicas") or 0


class ReplicaAlert(Handler):
    """Alerts while a Deployment has fewer available replicas than desired."""

    @classmethod
    def manifest(cls) -> Manifest:
        return (Manifest("replica-alert-py", "0.1.0")
                .subscribe(Subscription.to(Deployment).coalesced())
                .write(WriteRule.to(ConfigMap).verbs(Verb.APPLY).all_namespaces())
                .capability(EVENTS)
                .capability(HTTP)
                .metric(Metric.counter(ALERTS, "Deployments found with replicas unavailable").labels("namespace")))

    def __init__(self) -> None:
        #: The keys of the Deployments in a degraded episode, and whether its
        #: alert reached the webhook.
        self.degraded: Dict[str, bool] = {}
        #: The keys of the recovered Deployments whose message is still to be sent.
        self.recovering: Dict[str, bool] = {}

    def on_add(self, event: Event) -> None:
        self.reconcile(event.key, event.object)

    def on_update(self, event: Update) -> None:
        self.reconcile(event.key, event.new)

    def on_delete(self, event: Event) -> None:
        self.degraded.pop(event.key, None)
        self.recovering.pop(event.key, None)

    def reconcile(self, key: str, deployment: Deployment) -> None:
        """Compares available with desired replicas and acts on the difference."""
        webhook = settings().get("webhookUrl")
        want, have = deployment.replicas, available(deployment)
        configmaps = kube.Api(ConfigMap, namespace=deployment.namespace)
        if have < want:
            configmaps.apply(f"replica-alert-{deployment.name}", status_config_map(deployment, "degraded"),
                             force=True)
            if key not in self.degraded:
                log.warn("degraded", deployment=key, available=have, desired=want)
                events.warning(deployment, "ReplicasUnavailable", f"{have} of {want} replicas available",
                               action="Alerted")
                metrics.counter(ALERTS).labels(deployment.namespace or "").inc()
                self.degraded[key] = False
            if not self.degraded[key]:
                self.post(webhook, key, "degraded", want, have)
                self.degraded[key] = True
            workqueue.requeue_after(RECHECK_SECONDS)
        elif key in self.degraded or key in self.recovering:
            if self.degraded.pop(key, None) is not None:
                configmaps.apply(f"replica-alert-{deployment.name}", status_config_map(deployment, "ok"), force=True)
                log.info("recovered", deployment=key, available=have, desired=want)
                events.normal(deployment, "ReplicasAvailable", f"{have} of {want} replicas available",
                              action="Recovered")
                self.recovering[key] = False
            self.post(webhook, key, "recovered", want, have)
            self.recovering.pop(key)

    def post(self, webhook: Optional[str], key: str, state: str, want: int, have: int) -> None:
        """POSTs the message to the webhook, if there is one. A failure (an
        error, a status other than 2xx, too little time left) fails the call,
        so the host retries it, and the retry posts again."""
        if webhook is None:
            return
        if deadline.remaining_ms() < WEBHOOK_MIN_MS:
            raise HandlerError(f"no time left to post {state} for {key}; retried")
        message = {"text": f"{key}: {have} of {want} replicas available", "deployment": key, "state": state,
                   "desired": want, "available": have}
        try:
            response = http.post_json(webhook, message, timeout=2).raise_for_status()
        except http.HttpError as error:
            log.warn("webhook-failed", deployment=key, error=str(error))
            raise
        log.info("posted", deployment=key, state=state, status=response.status)


herald_sdk.export_plugin(ReplicaAlert)
