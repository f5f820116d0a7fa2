"""label-audit: reports Kubernetes objects missing the labels an operator requires.

Configuration (``config`` in the host configuration or the sidecar file)::

    required: [app, team]                  # label keys every object must carry (non-empty)
    kinds: [v1/Pod, apps/v1/Deployment]     # apiVersion/Kind of the kinds to audit
    namespace: shop                        # optional: audit one namespace only
    warnEvents: true                       # optional: also record a Warning Event per offending object

Without configuration it audits Pods and Deployments for ``app`` and ``team``
and only logs.

What it logs:

- ``warn missing required labels kind=... key=... missing=...`` when an object
  is added without some required labels, or an update changes which are missing;
- ``info required labels now present ...`` when an update fixes an object;
- ``info deleted while missing labels ...`` when an offending object goes away;
- ``info initial list audited objects=N missing=M`` once, at the first live
  notification after the initial list (the ABI has no end-of-list signal, so
  the summary waits for the next live event).

With ``warnEvents: true`` it also records a Kubernetes Warning Event
(reason ``MissingRequiredLabels``) on each object whenever it logs the
``missing required labels`` warning, so ``kubectl describe`` and
``kubectl get events`` show it beside the object. The manifest then asks for
the ``events`` capability, which the operator must grant; without the option
it asks for nothing beyond logging and cache reads.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

import herald_sdk
from herald_sdk import EVENTS, Event, GroupVersionKind, Handler, KubeError, Manifest, Subscription, Update, config, events, log

DEFAULT_REQUIRED = ["app", "team"]
DEFAULT_KINDS = ["v1/Pod", "apps/v1/Deployment"]
#: The reason of the Warning Events recorded with ``warnEvents``.
EVENT_REASON = "MissingRequiredLabels"


def parse_kind(text: str) -> GroupVersionKind:
    """``v1/Pod`` or ``apps/v1/Deployment`` as a kind; ``ValueError`` otherwise."""
    api_version, slash, kind = text.rpartition("/")
    if not slash or not api_version or not kind:
        raise ValueError(f"kinds: {text!r} is not apiVersion/Kind, e.g. v1/Pod or apps/v1/Deployment")
    return GroupVersionKind.from_api_version(api_version, kind)


class Settings:
    """The plugin's configuration, checked."""

    def __init__(self, raw: object) -> None:
        raw = {} if raw is None else raw
        if not isinstance(raw, dict):
            raise ValueError(f"the configuration must be a map, got {type(raw).__name__}")
        unknown = set(raw) - {"required", "kinds", "namespace", "warnEvents"}
        if unknown:
            raise ValueError(f"unknown configuration keys: {', '.join(sorted(unknown))}")
        required = raw.get("required", DEFAULT_REQUIRED)
        if not isinstance(required, list) or not required or not all(isinstance(k, str) and k for k in required):
            raise ValueError("required: expected a non-empty list of label keys")
        kinds = raw.get("kinds", DEFAULT_KINDS)
        if not isinstance(kinds, list) or not kinds or not all(isinstance(k, str) for k in kinds):
            raise ValueError("kinds: expected a non-empty list such as [v1/Pod, apps/v1/Deployment]")
        namespace = raw.get("namespace")
        if namespace is not None and not isinstance(namespace, str):
            raise ValueError("namespace: expected a string")
        warn_events = raw.get("warnEvents", False)
        if not isinstance(warn_events, bool):
            raise ValueError("warnEvents: expected true or false")
        #: The label keys every object must carry.
        self.required: List[str] = required
        #: The kinds audited.
        self.kinds: List[GroupVersionKind] = [parse_kind(kind) for kind in kinds]
        #: The one namespace audited, or ``None`` for all.
        self.namespace = namespace
        #: Whether to record a Warning Event per offending object.
        self.warn_events: bool = warn_events

    @classmethod
    def load(cls) -> "Settings":
        """The operator's configuration, or the defaults without one."""
        return cls(config.get())


class LabelAudit(Handler):
    """Warns about objects missing required labels and notes when they are fixed."""

    @classmethod
    def manifest(cls) -> Manifest:
        settings = Settings.load()
        manifest = Manifest("label-audit", "0.1.0")
        for kind in settings.kinds:
            subscription = Subscription.to(kind)
            if settings.namespace:
                subscription = subscription.namespace(settings.namespace)
            manifest.subscribe(subscription)
        if settings.warn_events:
            manifest.capability(EVENTS)
        return manifest

    def __init__(self) -> None:
        self.settings = Settings.load()
        #: What each offending object misses, by (kind, key).
        self.offending: Dict[Tuple[str, str], Tuple[str, ...]] = {}
        #: Objects seen, and offending ones, during the initial list.
        self.listed = 0
        self.listed_missing = 0
        self.summary_logged = False

    def missing(self, labels: Dict[str, str]) -> Tuple[str, ...]:
        """The required keys absent from ``labels`` or set to an empty value."""
        return tuple(key for key in self.settings.required if not labels.get(key))

    def summarize_initial_list(self, event) -> None:
        """Logs the initial-list summary once, at the first live notification."""
        if not event.is_initial_list and not self.summary_logged and self.listed:
            self.summary_logged = True
            log.info("initial list audited", objects=self.listed, missing=self.listed_missing)

    def record(self, event, obj: Dict, labels: Dict[str, str]) -> Tuple[str, ...]:
        """Warns if the object misses labels it did not miss before (and
        records a Warning Event if configured); logs a fix; remembers the
        current state. Returns what is missing."""
        slot = (event.kind.kind, event.key)
        missing = self.missing(labels)
        before = self.offending.get(slot)
        if missing:
            self.offending[slot] = missing
            if missing != before:
                log.warn("missing required labels", kind=event.kind.kind, key=event.key,
                         missing=",".join(missing))
                if self.settings.warn_events:
                    self.publish_warning(event, obj, missing)
        elif before is not None:
            del self.offending[slot]
            log.info("required labels now present", kind=event.kind.kind, key=event.key)
        return missing

    def publish_warning(self, event, obj: Dict, missing: Tuple[str, ...]) -> None:
        """Records the Warning Event for an offending object. A refusal
        (throttled, API server unavailable, ...) is logged, not raised: the
        finding is in the log already, and failing the call would make the
        host retry the whole notification for the sake of an Event."""
        note = f"missing required labels: {', '.join(missing)}"
        try:
            events.warning(obj, EVENT_REASON, note, kind=event.kind)
        except KubeError as error:
            log.error("could not record the event", kind=event.kind.kind, key=event.key,
                      error=f"{type(error).__name__}: {error}")

    def on_add(self, event: Event) -> None:
        self.summarize_initial_list(event)
        missing = self.record(event, event.object, event.object.labels)
        if event.is_initial_list:
            self.listed += 1
            self.listed_missing += bool(missing)

    def on_update(self, event: Update) -> None:
        self.summarize_initial_list(event)
        self.record(event, event.new, event.new.labels)

    def on_delete(self, event: Event) -> None:
        self.summarize_initial_list(event)
        missing = self.offending.pop((event.kind.kind, event.key), None)
        if missing:
            log.info("deleted while missing labels", kind=event.kind.kind, key=event.key,
                     missing=",".join(missing))


herald_sdk.export_plugin(LabelAudit)
