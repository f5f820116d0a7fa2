"""The manifest builder: what a plugin watches and what it asks for.

.. code-block:: python

    from herald_sdk import EVENTS, HTTP, Index, Limits, Manifest, Metric, Subscription, Verb, WriteRule
    from herald_sdk.kinds import Deployment, Pod, ReplicaSet

    manifest = (
        Manifest("web-watch", "1.2.0")
        .subscribe(Subscription.to(Pod).namespace("web").labels("app=web"))
        .subscribe(Subscription.to(Deployment).resync(seconds=300).coalesced())
        .subscribe_kind("example.com", "v1", "Widget")
        .limits(Limits().call_deadline(milliseconds=500))
        .write(WriteRule.to(Deployment).verbs(Verb.GET, Verb.PATCH).namespaces("web"))
        .write(WriteRule.to(Deployment).verbs("patch").status().namespaces("web"))
        .capability(EVENTS)
    )

A plugin with metrics of its own declares them (:mod:`herald_sdk.metrics`),
one that looks cached objects up by an index declares it
(:mod:`herald_sdk.cache`), and one that makes HTTP requests asks for the
``http`` capability (:mod:`herald_sdk.http`). One that decides on writes at
admission declares its webhooks (:mod:`herald_sdk.admission`), and may
subscribe to nothing::

    Manifest("crash-alert", "0.1.0")
        .subscribe(Subscription.to(Pod).coalesced())
        .capability(HTTP)
        .metric(Metric.counter("alerts_total", "Alerts sent").labels("namespace"))
        .index(Index.by_owner("owner", ReplicaSet))

    Manifest("no-latest", "0.1.0")
        .validating(Webhook().rule(AdmissionRule.to(Pod).create().update()))

Write rules and capabilities are what the operator must grant: a plugin
declaring more than its grant is not loaded, and every ``kube`` call is
checked against the rules before it leaves the host.
"""

from __future__ import annotations

import copy
import enum
import re
from typing import Any, List, Optional

from herald_sdk.admission import Webhook
from herald_sdk.kinds import GroupVersionKind, as_kind

#: The capability :mod:`herald_sdk.events` needs.
EVENTS = "events"
#: The capability :mod:`herald_sdk.http` needs (the operator grants the origins).
HTTP = "http"

#: What the host accepts as a plugin name.
_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")


class Delivery(enum.Enum):
    """How notifications for a subscription are queued."""

    #: Every notification, one at a time, in the order the informer
    #: distributed them (client-go's behaviour). The default.
    EVERY_EVENT = "every-event"
    #: At most one pending notification per object key, merged while it
    #: waits: for level-triggered plugins that only need the latest state.
    COALESCED = "coalesced"


class Subscription:
    """One watched resource: a kind plus an optional namespace, selectors,
    resync period and delivery mode. Start from :meth:`to`; every other
    method returns a changed copy, so a subscription can be shared."""

    def __init__(self, kind: GroupVersionKind) -> None:
        #: The kind watched; the host resolves it through discovery.
        self.kind: GroupVersionKind = kind
        #: Only this namespace; ``None`` means every namespace (or a cluster-scoped kind).
        self.namespace_name: Optional[str] = None
        #: A label selector, e.g. ``app=web,tier!=cache``.
        self.label_selector_text: Optional[str] = None
        #: A field selector, e.g. ``metadata.name=web``.
        self.field_selector_text: Optional[str] = None
        #: Resync period in milliseconds; ``None`` means no resync.
        self.resync_period_ms: Optional[int] = None
        #: How notifications are queued.
        self.delivery_mode: Delivery = Delivery.EVERY_EVENT

    @classmethod
    def to(cls, kind_or_group: Any, version: Optional[str] = None,
           kind: Optional[str] = None) -> "Subscription":
        """Every object of a kind, in every namespace, each event delivered.

        The kind is a typed view (``Subscription.to(Pod)``), a
        :class:`GroupVersionKind`, or three strings
        (``Subscription.to("", "v1", "Pod")``, ``Subscription.to("example.com", "v1", "Widget")``).
        """
        if version is None and kind is None:
            return cls(as_kind(kind_or_group))
        if not (isinstance(kind_or_group, str) and isinstance(version, str) and isinstance(kind, str)):
            raise TypeError("Subscription.to takes a kind, or three strings: group, version, kind")
        return cls(GroupVersionKind(kind_or_group, version, kind))

    def _with(self, **changes: Any) -> "Subscription":
        changed = copy.copy(self)
        for name, value in changes.items():
            setattr(changed, name, value)
        return changed

    def namespace(self, namespace: str) -> "Subscription":
        """Only objects in ``namespace``."""
        return self._with(namespace_name=namespace)

    def labels(self, selector: str) -> "Subscription":
        """Only objects matching the label selector, e.g. ``app=web,tier!=cache``
        (the Rust SDK's ``.labels``)."""
        return self._with(label_selector_text=selector)

    def fields(self, selector: str) -> "Subscription":
        """Only objects matching the field selector, e.g. ``spec.nodeName=node-1``
        (the Rust SDK's ``.fields``)."""
        return self._with(field_selector_text=selector)

    def resync(self, seconds: float = 0, milliseconds: int = 0) -> "Subscription":
        """Re-deliver every cached object this often as ``on_update(cached,
        cached)`` with ``is_resync`` set. The host rejects periods under one second."""
        return self._with(resync_period_ms=int(seconds * 1000) + milliseconds)

    def coalesced(self) -> "Subscription":
        """Deliver at most one pending notification per object, merged while
        it waits (:attr:`Delivery.COALESCED`)."""
        return self.delivery(Delivery.COALESCED)

    def delivery(self, mode: Delivery) -> "Subscription":
        """Sets the delivery mode."""
        return self._with(delivery_mode=mode)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Subscription) and vars(self) == vars(other)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in vars(self).items())
        return f"Subscription({fields})"


class Verb(enum.Enum):
    """A Kubernetes API verb a plugin may use through :mod:`herald_sdk.kube`."""

    #: Read one object from the API server (``Api.get``).
    GET = "get"
    #: Create an object (``Api.create``).
    CREATE = "create"
    #: Replace an object (``Api.replace``); Kubernetes calls it update.
    UPDATE = "update"
    #: Patch an object: merge, JSON or strategic merge patch (``Api.patch``).
    PATCH = "patch"
    #: Server-side apply (``Api.apply``).
    APPLY = "apply"
    #: Delete an object (``Api.delete``).
    DELETE = "delete"


#: The subresource a write rule may name besides the object itself.
STATUS = "status"


def _union(first: List[Any], more: Any) -> List[Any]:
    """``first`` followed by the items of ``more`` not seen yet, in order."""
    result = list(first)
    for item in more:
        if item not in result:
            result.append(item)
    return result


class WriteRule:
    """The Kubernetes calls a plugin will make on one kind: verbs, in some
    namespaces, on the object itself or its ``status`` subresource. Start
    from :meth:`to`; every other method returns a changed copy::

        WriteRule.to(NetworkPolicy).verbs(Verb.GET, Verb.APPLY).namespaces("shop", "web")
        WriteRule.to("apps", "Deployment").verbs("patch").status().all_namespaces()

    The host refuses a rule without verbs or namespaces (:meth:`Manifest.problems`
    says so before the build)."""

    def __init__(self, group: str, kind: str) -> None:
        #: The kind's API group; ``""`` for the core group.
        self.group = group
        #: The kind, e.g. ``NetworkPolicy``.
        self.kind = kind
        #: The verbs the plugin will use.
        self.verb_list: List[Verb] = []
        #: ``None`` for the object itself, ``"status"`` for its status subresource.
        self.subresource_name: Optional[str] = None
        #: The namespaces it will write in; ``"*"`` means all (and cluster-scoped objects).
        self.namespace_list: List[str] = []

    @classmethod
    def to(cls, kind_or_group: Any, kind: Optional[str] = None) -> "WriteRule":
        """A rule on a kind: a typed view (``WriteRule.to(Deployment)``), a
        :class:`GroupVersionKind` (its version is not part of the rule), or
        two strings, group and kind (``WriteRule.to("", "ConfigMap")``)."""
        if kind is None:
            gvk = as_kind(kind_or_group)
            return cls(gvk.group, gvk.kind)
        if not (isinstance(kind_or_group, str) and isinstance(kind, str)):
            raise TypeError("WriteRule.to takes a kind, or two strings: group, kind")
        return cls(kind_or_group, kind)

    def _with(self, **changes: Any) -> "WriteRule":
        changed = copy.copy(self)
        for name, value in changes.items():
            setattr(changed, name, value)
        return changed

    def verbs(self, *verbs: Any) -> "WriteRule":
        """Adds verbs, given as :class:`Verb` or their names (``"patch"``)."""
        parsed = []
        for verb in verbs:
            try:
                parsed.append(verb if isinstance(verb, Verb) else Verb(verb))
            except ValueError:
                names = ", ".join(v.value for v in Verb)
                raise ValueError(f"unknown verb {verb!r}: one of {names}") from None
        return self._with(verb_list=_union(self.verb_list, parsed))

    def namespaces(self, *namespaces: str) -> "WriteRule":
        """Adds namespaces the plugin will write in."""
        for namespace in namespaces:
            if not isinstance(namespace, str) or not namespace:
                raise TypeError(f"a namespace is a non-empty string, got {namespace!r}")
        return self._with(namespace_list=_union(self.namespace_list, namespaces))

    def all_namespaces(self) -> "WriteRule":
        """Every namespace, and cluster-scoped objects (``*``)."""
        return self.namespaces("*")

    def status(self) -> "WriteRule":
        """The rule is for the ``status`` subresource, not the object
        (a separate grant, as in Kubernetes RBAC)."""
        return self.subresource(STATUS)

    def subresource(self, name: Optional[str]) -> "WriteRule":
        """Sets the subresource (``"status"``), or ``None`` for the object."""
        return self._with(subresource_name=name)

    def validating(self, webhook: Webhook) -> "Manifest":
        """Declares the plugin's validating webhook: the writes its
        :meth:`~herald_sdk.Handler.validate` decides on (see
        :mod:`herald_sdk.admission`)."""
        if not isinstance(webhook, Webhook):
            raise TypeError(f"validating takes a herald_sdk.admission.Webhook, got {webhook!r}")
        self.validating_webhook = webhook
        return self

    def mutating(self, webhook: Webhook) -> "Manifest":
        """Declares the plugin's mutating webhook: the writes its
        :meth:`~herald_sdk.Handler.mutate` decides on and may change."""
        if not isinstance(webhook, Webhook):
            raise TypeError(f"mutating takes a herald_sdk.admission.Webhook, got {webhook!r}")
        self.mutating_webhook = webhook
        return self

    def problems(self) -> List[str]:
        """What the host would refuse in this rule."""
        what = f"write rule on {self.group or 'core'}/{self.kind}"
        found = []
        if not self.kind:
            found.append("a write rule names no kind")
        if not self.verb_list:
            found.append(f"{what} has no verbs")
        if not self.namespace_list:
            found.append(f"{what} has no namespaces (use .namespaces(...) or .all_namespaces())")
        if self.subresource_name not in (None, STATUS):
            found.append(f"{what}: subresource {self.subresource_name!r} is not 'status'")
        return found

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WriteRule) and vars(self) == vars(other)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in vars(self).items())
        return f"WriteRule({fields})"


class Limits:
    """Limits a plugin asks for; the operator's configuration caps them,
    and unset ones take the operator's defaults."""

    def __init__(self) -> None:
        #: Deadline for one handler call, in milliseconds; ``None`` for the default.
        self.call_deadline_ms: Optional[int] = None
        #: Maximum linear memory of the instance, in bytes; ``None`` for the default.
        self.memory_bytes_max: Optional[int] = None

    def call_deadline(self, seconds: float = 0, milliseconds: int = 0) -> "Limits":
        """Asks for this deadline per handler call (millisecond precision)."""
        changed = copy.copy(self)
        changed.call_deadline_ms = int(seconds * 1000) + milliseconds
        return changed

    def memory_bytes(self, size: int) -> "Limits":
        """Asks for this much linear memory, in bytes (``64 << 20`` is 64 MiB)."""
        changed = copy.copy(self)
        changed.memory_bytes_max = size
        return changed

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Limits) and vars(self) == vars(other)

    def __repr__(self) -> str:
        return f"Limits(call_deadline_ms={self.call_deadline_ms!r}, memory_bytes={self.memory_bytes_max!r})"


class Manifest:
    """What a plugin is and what it needs; returned by
    :meth:`herald_sdk.Handler.manifest`, read once per load. Every method
    returns the manifest itself, so calls chain."""

    def __init__(self, name: str, version: str) -> None:
        #: Unique plugin name: lowercase letters, digits and ``-``.
        self.name = name
        #: The plugin's own version (free-form, semver advised).
        self.version = version
        #: The resources watched; the host requires at least one, or a webhook.
        self.subscriptions: List[Subscription] = []
        #: Limits requested.
        self.requested_limits = Limits()
        #: Host capabilities beyond logging and cache reads; each must be
        #: granted by the operator or the plugin is not loaded.
        self.capabilities: List[str] = []
        #: The Kubernetes calls the plugin will make through :mod:`herald_sdk.kube`;
        #: each must be covered by the operator's grant.
        self.write_rules: List[WriteRule] = []
        #: The metrics the plugin updates through :mod:`herald_sdk.metrics`.
        self.metrics: List[Any] = []
        #: The cache indexes the plugin looks objects up by (:func:`herald_sdk.cache.by_index`).
        self.indexes: List[Any] = []
        #: The writes :meth:`herald_sdk.Handler.validate` decides on; ``None``: none.
        self.validating_webhook: Optional[Webhook] = None
        #: The writes :meth:`herald_sdk.Handler.mutate` decides on and may change; ``None``: none.
        self.mutating_webhook: Optional[Webhook] = None

    def subscribe(self, subscription: Subscription) -> "Manifest":
        """Adds a subscription."""
        if not isinstance(subscription, Subscription):
            raise TypeError(f"subscribe takes a Subscription, got {subscription!r}")
        self.subscriptions.append(subscription)
        return self

    def subscribe_kind(self, group: str, version: str, kind: str) -> "Manifest":
        """Adds a subscription to every object of a kind named by strings (a
        CRD, say), in every namespace, without selectors."""
        return self.subscribe(Subscription.to(group, version, kind))

    def limits(self, limits: Limits) -> "Manifest":
        """Sets the limits requested."""
        self.requested_limits = limits
        return self

    def capability(self, capability: str) -> "Manifest":
        """Asks for a host capability: :data:`EVENTS` (``"events"``) for
        :mod:`herald_sdk.events`, :data:`HTTP` (``"http"``) for
        :mod:`herald_sdk.http`. Asking twice is the same as once."""
        if not isinstance(capability, str) or not capability:
            raise TypeError(f"a capability is a non-empty string, got {capability!r}")
        if capability not in self.capabilities:
            self.capabilities.append(capability)
        return self

    def write(self, rule: WriteRule) -> "Manifest":
        """Declares Kubernetes calls the plugin will make (see :class:`WriteRule`)."""
        if not isinstance(rule, WriteRule):
            raise TypeError(f"write takes a WriteRule, got {rule!r}")
        self.write_rules.append(rule)
        return self

    def metric(self, metric: Any) -> "Manifest":
        """Declares a metric the plugin updates (a :class:`herald_sdk.metrics.Metric`)."""
        from herald_sdk.metrics import Metric

        if not isinstance(metric, Metric):
            raise TypeError(f"metric takes a herald_sdk.metrics.Metric, got {metric!r}")
        self.metrics.append(metric)
        return self

    def index(self, index: Any) -> "Manifest":
        """Declares a cache index (a :class:`herald_sdk.cache.Index`) looked up
        with :func:`herald_sdk.cache.by_index`."""
        from herald_sdk.cache import Index

        if not isinstance(index, Index):
            raise TypeError(f"index takes a herald_sdk.cache.Index, got {index!r}")
        self.indexes.append(index)
        return self

    def validating(self, webhook: Webhook) -> "Manifest":
        """Declares the plugin's validating webhook: the writes its
        :meth:`~herald_sdk.Handler.validate` decides on (see
        :mod:`herald_sdk.admission`)."""
        if not isinstance(webhook, Webhook):
            raise TypeError(f"validating takes a herald_sdk.admission.Webhook, got {webhook!r}")
        self.validating_webhook = webhook
        return self

    def mutating(self, webhook: Webhook) -> "Manifest":
        """Declares the plugin's mutating webhook: the writes its
        :meth:`~herald_sdk.Handler.mutate` decides on and may change."""
        if not isinstance(webhook, Webhook):
            raise TypeError(f"mutating takes a herald_sdk.admission.Webhook, got {webhook!r}")
        self.mutating_webhook = webhook
        return self

    def problems(self) -> List[str]:
        """What the host would refuse in this manifest (empty when it looks
        loadable): a name that is not lowercase letters, digits and ``-``,
        neither a subscription nor a webhook, a webhook without rules or
        operations or with a timeout outside 1 to 30 seconds, a resync
        period under one second, a write rule
        without verbs or namespaces, a metric breaking Prometheus' naming
        rules or defined twice, an index of a kind not subscribed to or
        declared twice. The build command checks this before compiling."""
        found = []
        if not _NAME.match(self.name):
            found.append(f"name {self.name!r} must be lowercase letters, digits and '-'")
        if not self.subscriptions and self.validating_webhook is None and self.mutating_webhook is None:
            found.append("no subscription and no webhook: subscribe to at least one kind, or declare a webhook")
        for role, webhook in (("validating", self.validating_webhook), ("mutating", self.mutating_webhook)):
            if webhook is not None:
                found.extend(webhook.problems(role))
        for subscription in self.subscriptions:
            period = subscription.resync_period_ms
            if period is not None and period < 1000:
                found.append(f"resync period of {subscription.kind} is {period} ms, under one second")
        for rule in self.write_rules:
            found.extend(rule.problems())
        names: List[str] = []
        for metric in self.metrics:
            problem = metric.problem()
            if problem is not None:
                found.append(problem)
            if metric.name in names:
                found.append(f"metric {metric.name} is defined twice")
            names.append(metric.name)
        subscribed = {subscription.kind for subscription in self.subscriptions}
        index_names: List[str] = []
        for index in self.indexes:
            if index.kind not in subscribed:
                found.append(f"index {index.name!r} is of {index.kind}, which it does not subscribe to")
            if index.name in index_names:
                found.append(f"index {index.name!r} is declared twice")
            index_names.append(index.name)
        return found

    def __repr__(self) -> str:
        return (f"Manifest(name={self.name!r}, version={self.version!r}, "
                f"subscriptions={self.subscriptions!r}, limits={self.requested_limits!r}, "
                f"capabilities={self.capabilities!r}, writes={self.write_rules!r}, "
                f"metrics={self.metrics!r}, indexes={self.indexes!r}, "
                f"validating={self.validating_webhook!r}, mutating={self.mutating_webhook!r})")
