"""Admission: deciding on writes before they reach the cluster (world
0.5.0). A plugin declares its webhooks in the manifest
(:meth:`~herald_sdk.Manifest.validating`, :meth:`~herald_sdk.Manifest.mutating`)
and answers :meth:`~herald_sdk.Handler.validate` and
:meth:`~herald_sdk.Handler.mutate` for each :class:`AdmissionReview` the API
server sends through the host.

During an admission call the plugin may read the cache (within its read
grants) and nothing else: writes, Events and HTTP are refused, because a
review must have no side effects. An exception raised by ``validate`` or
``mutate`` is a fault: the host answers by the webhook's failure policy.

.. code-block:: python

    import herald_sdk
    from herald_sdk import Handler, Manifest
    from herald_sdk.admission import AdmissionRule, Verdict, Webhook
    from herald_sdk.kinds import Pod

    class NoLatest(Handler):
        @classmethod
        def manifest(cls):
            return Manifest("no-latest", "0.1.0").validating(
                Webhook().rule(AdmissionRule.to(Pod).create().update()))

        def validate(self, review):
            latest = [image for image in review.object.images if image.endswith(":latest")]
            return Verdict.deny(f"images must be pinned: {', '.join(latest)}") if latest else Verdict.allow()

    herald_sdk.export_plugin(NoLatest)
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import json
from typing import Any, Dict, List, Optional, Type, TypeVar

from herald_sdk.errors import HandlerError
from herald_sdk.kinds import GroupVersionKind, KubeObject, as_kind, view_for

View = TypeVar("View", bound=KubeObject)


class Operation(enum.Enum):
    """The operation a review is about, as AdmissionReview spells it."""

    #: An object is created.
    CREATE = "CREATE"
    #: An object is changed.
    UPDATE = "UPDATE"
    #: An object is deleted.
    DELETE = "DELETE"
    #: A connect subresource is used (``exec``, ``attach``, ``portforward``).
    CONNECT = "CONNECT"


class FailurePolicy(enum.Enum):
    """What the API server does when the plugin cannot decide (a fault, a
    timeout, the plugin gone)."""

    #: Refuse the write (Kubernetes' default).
    FAIL = "fail"
    #: Let the write through.
    IGNORE = "ignore"


def _operation(value: Any) -> Operation:
    """``value`` as an :class:`Operation`: one, or its name in any case (``"create"``)."""
    if isinstance(value, Operation):
        return value
    try:
        return Operation(str(value).upper())
    except ValueError:
        names = ", ".join(operation.value for operation in Operation)
        raise ValueError(f"unknown operation {value!r}: one of {names}") from None


class AdmissionRule:
    """One kind of write a webhook covers: a kind, its operations and
    optionally a subresource. Start from :meth:`to`; every other method
    returns a changed copy::

        AdmissionRule.to(Pod).create().update()
        AdmissionRule.to("apps", "v1", "Deployment").operation("update").subresource("scale")
    """

    def __init__(self, kind: GroupVersionKind) -> None:
        #: The kind; the host resolves it to its resource through discovery.
        self.kind: GroupVersionKind = kind
        #: The operations covered; the host requires at least one.
        self.operation_list: List[Operation] = []
        #: A subresource (``"status"``), or ``None`` for the object itself.
        self.subresource_name: Optional[str] = None

    @classmethod
    def to(cls, kind_or_group: Any, version: Optional[str] = None, kind: Optional[str] = None) -> "AdmissionRule":
        """A rule for a kind, with no operation yet: a typed view
        (``AdmissionRule.to(Pod)``), a :class:`GroupVersionKind`, or three
        strings (``AdmissionRule.to("example.com", "v1", "Widget")``)."""
        if version is None and kind is None:
            return cls(as_kind(kind_or_group))
        if not (isinstance(kind_or_group, str) and isinstance(version, str) and isinstance(kind, str)):
            raise TypeError("AdmissionRule.to takes a kind, or three strings: group, version, kind")
        return cls(GroupVersionKind(kind_or_group, version, kind))

    def _with(self, **changes: Any) -> "AdmissionRule":
        changed = copy.copy(self)
        for name, value in changes.items():
            setattr(changed, name, value)
        return changed

    def operation(self, *operations: Any) -> "AdmissionRule":
        """Adds operations, given as :class:`Operation` or their names (``"CREATE"``)."""
        listed = list(self.operation_list)
        for operation in map(_operation, operations):
            if operation not in listed:
                listed.append(operation)
        return self._with(operation_list=listed)

    def create(self) -> "AdmissionRule":
        """Adds ``CREATE``."""
        return self.operation(Operation.CREATE)

    def update(self) -> "AdmissionRule":
        """Adds ``UPDATE``."""
        return self.operation(Operation.UPDATE)

    def delete(self) -> "AdmissionRule":
        """Adds ``DELETE``."""
        return self.operation(Operation.DELETE)

    def connect(self) -> "AdmissionRule":
        """Adds ``CONNECT``."""
        return self.operation(Operation.CONNECT)

    def subresource(self, name: Optional[str]) -> "AdmissionRule":
        """Covers the subresource ``name`` (``"status"``) instead of the
        object itself; ``None`` for the object."""
        return self._with(subresource_name=name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AdmissionRule) and vars(self) == vars(other)

    def __repr__(self) -> str:
        return (f"AdmissionRule(kind={self.kind!r}, operations={[o.value for o in self.operation_list]!r}, "
                f"subresource={self.subresource_name!r})")


class Webhook:
    """A webhook: the writes the API server sends the plugin for one
    decision (validate or mutate). Failing closed, with the API server's
    default timeout (10 s), until told otherwise. Every method returns a
    changed copy::

        Webhook().rule(AdmissionRule.to(Pod).create()).in_namespaces("shop", "web")
            .failure_policy(FailurePolicy.IGNORE).timeout_seconds(5)
    """

    def __init__(self) -> None:
        #: What it covers; the host requires at least one rule.
        self.rules: List[AdmissionRule] = []
        #: Only namespaces whose labels match this selector; ``None``: every
        #: namespace but those the operator leaves out.
        self.namespace_selector: Optional[str] = None
        #: Only objects whose labels match this selector; ``None``: all.
        self.object_selector: Optional[str] = None
        #: What happens when the plugin cannot decide.
        self.failure_policy_mode: FailurePolicy = FailurePolicy.FAIL
        #: How long the API server waits, 1 to 30 seconds; ``None``: 10.
        self.timeout_seconds_limit: Optional[int] = None

    def _with(self, **changes: Any) -> "Webhook":
        changed = copy.copy(self)
        for name, value in changes.items():
            setattr(changed, name, value)
        return changed

    def rule(self, rule: AdmissionRule) -> "Webhook":
        """Adds a rule."""
        if not isinstance(rule, AdmissionRule):
            raise TypeError(f"rule takes an AdmissionRule, got {rule!r}")
        return self._with(rules=self.rules + [rule])

    def namespaces_labelled(self, selector: str) -> "Webhook":
        """Only namespaces whose labels match ``selector`` (label-selector syntax)."""
        return self._with(namespace_selector=selector)

    def in_namespaces(self, *names: str) -> "Webhook":
        """Only the namespaces named (by their ``kubernetes.io/metadata.name``
        label, which the API server sets on every namespace)."""
        return self.namespaces_labelled(f"kubernetes.io/metadata.name in ({','.join(names)})")

    def objects_labelled(self, selector: str) -> "Webhook":
        """Only objects whose labels match ``selector``."""
        return self._with(object_selector=selector)

    def failure_policy(self, policy: FailurePolicy) -> "Webhook":
        """What happens when the plugin cannot decide."""
        if not isinstance(policy, FailurePolicy):
            raise TypeError(f"failure_policy takes a FailurePolicy, got {policy!r}")
        return self._with(failure_policy_mode=policy)

    def timeout_seconds(self, seconds: int) -> "Webhook":
        """How long the API server waits for the answer, 1 to 30 seconds."""
        return self._with(timeout_seconds_limit=int(seconds))

    def problems(self, role: str) -> List[str]:
        """What the host would refuse in this webhook, declared as ``role``
        (``validating`` or ``mutating``)."""
        found = []
        if not self.rules:
            found.append(f"admission.{role}.rules is empty: a webhook admits at least one kind")
        for index, rule in enumerate(self.rules):
            if not rule.operation_list:
                found.append(f"admission.{role}.rules[{index}].operations is empty: name at least one")
        timeout = self.timeout_seconds_limit
        if timeout is not None and not 1 <= timeout <= 30:
            found.append(f"admission.{role}.timeoutSeconds must be 1 to 30 (Kubernetes' bounds)")
        return found

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Webhook) and vars(self) == vars(other)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in vars(self).items())
        return f"Webhook({fields})"


@dataclasses.dataclass(frozen=True)
class UserInfo:
    """Who asked for a write (``userInfo`` of the review)."""

    #: The user's name.
    username: str = ""
    #: The user's uid.
    uid: str = ""
    #: Their groups.
    groups: List[str] = dataclasses.field(default_factory=list)
    #: Extra attributes from the authenticator: name to values.
    extra: Dict[str, List[str]] = dataclasses.field(default_factory=dict)


def _decode(what: str, text: Optional[str], view: type) -> Any:
    if text is None:
        raise HandlerError(f"the review carries no {what}")
    try:
        value = json.loads(text)
    except ValueError as error:
        raise HandlerError(f"decoding the review's {what}: {error}") from error
    if not isinstance(value, dict):
        raise HandlerError(f"decoding the review's {what}: expected a JSON object, got {type(value).__name__}")
    return view(value)


class AdmissionReview:
    """One write the API server asks about.

    ``review.object`` is the object as it would be stored and
    ``review.old_object`` the one stored, each parsed on first use into a
    :class:`~herald_sdk.kinds.KubeObject` (a typed view such as
    :class:`~herald_sdk.kinds.Pod` when the kind has one); the first raises
    :class:`~herald_sdk.HandlerError` on a delete, the second on a create
    (``object_json`` and ``old_object_json`` are ``None`` then).
    """

    def __init__(self, *, uid: str, kind: GroupVersionKind, resource: str, subresource: str = "",
                 name: str = "", namespace: str = "", operation: Operation,
                 user_info: Optional[UserInfo] = None, object_json: Optional[str] = None,
                 old_object_json: Optional[str] = None, dry_run: bool = False,
                 options_json: Optional[str] = None) -> None:
        #: The review's identifier.
        self.uid = uid
        #: The kind of the object, in the version the plugin declared.
        self.kind = kind
        #: The resource, plural (``pods``).
        self.resource = resource
        #: The subresource written; ``""`` for the object itself.
        self.subresource = subresource
        #: The object's name; ``""`` on a create whose name the server generates.
        self.name = name
        #: Its namespace; ``""`` for cluster-scoped kinds.
        self.namespace = namespace
        #: What is being done.
        self.operation = operation
        #: Who is doing it.
        self.user_info = user_info if user_info is not None else UserInfo()
        #: The object as it would be stored, as JSON text; ``None`` on a delete.
        self.object_json = object_json
        #: The object as it is stored, as JSON text; ``None`` on a create.
        self.old_object_json = old_object_json
        #: True when the write will not persist.
        self.dry_run = dry_run
        #: The operation's options (CreateOptions, ...) as JSON text; ``None`` when absent.
        self.options_json = options_json
        self._parsed: Dict[str, Any] = {}

    def _parse(self, what: str, text: Optional[str], view: type) -> Any:
        if what not in self._parsed:
            self._parsed[what] = _decode(what, text, view)
        return self._parsed[what]

    @property
    def object(self) -> KubeObject:
        """The object as it would be stored, parsed (once)."""
        return self._parse("object", self.object_json, view_for(self.kind))

    @property
    def old_object(self) -> KubeObject:
        """The object as it is stored, parsed (once)."""
        return self._parse("oldObject", self.old_object_json, view_for(self.kind))

    @property
    def options(self) -> Optional[Dict[str, Any]]:
        """The operation's options, parsed; ``None`` when absent."""
        return None if self.options_json is None else self._parse("options", self.options_json, dict)

    def object_as(self, view: Type[View]) -> View:
        """The object as the typed view ``view``, e.g. ``review.object_as(Pod)``."""
        return view(self.object)

    def old_object_as(self, view: Type[View]) -> View:
        """The stored object as the typed view ``view``."""
        return view(self.old_object)

    @property
    def key(self) -> str:
        """``namespace/name``, or ``name`` when cluster-scoped."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def __repr__(self) -> str:
        return f"AdmissionReview({self.operation.value} {self.kind} {self.key}, uid={self.uid!r})"


@dataclasses.dataclass(frozen=True)
class Verdict:
    """A decision: allow, or refuse with a message (and an HTTP code);
    warnings either way. Build one with :meth:`allow` or :meth:`deny`."""

    #: Whether the write may go ahead.
    allowed: bool
    #: Why it was refused, for the user.
    message: str = ""
    #: The HTTP status of a refusal (400 to 599); ``None``: 403.
    code: Optional[int] = None
    #: Warnings the user's client prints.
    warnings: List[str] = dataclasses.field(default_factory=list)

    @classmethod
    def allow(cls) -> "Verdict":
        """Let the write through."""
        return cls(allowed=True)

    @classmethod
    def deny(cls, message: str, code: Optional[int] = None) -> "Verdict":
        """Refuse it, saying why; ``code`` is the HTTP status (403 Forbidden
        unless given, 400 to 599)."""
        if code is not None and not 400 <= code <= 599:
            raise ValueError(f"a refusal's code is 400 to 599, got {code}")
        return cls(allowed=False, message=message, code=code)

    def warn(self, warning: str) -> "Verdict":
        """The same decision with one more warning."""
        return dataclasses.replace(self, warnings=[*self.warnings, warning])


@dataclasses.dataclass(frozen=True)
class Mutation:
    """What a mutating plugin answers: its decision and at most one change,
    a JSON Patch or the whole changed object (ignored when the write is
    refused). Build one with :meth:`none`, :meth:`patch`, :meth:`object` or
    :meth:`deny`."""

    #: The decision.
    verdict: Verdict
    #: A JSON Patch (RFC 6902) against the review's object: a list of operations.
    json_patch: Optional[List[Dict[str, Any]]] = None
    #: The whole changed object; the host computes the patch.
    changed_object: Optional[Dict[str, Any]] = None

    @classmethod
    def none(cls) -> "Mutation":
        """Allow, unchanged."""
        return cls(Verdict.allow())

    @classmethod
    def patch(cls, operations: List[Dict[str, Any]]) -> "Mutation":
        """Allow with a JSON Patch, e.g.
        ``[{"op": "add", "path": "/metadata/labels/team", "value": "web"}]``."""
        if not isinstance(operations, list):
            raise TypeError(f"a JSON Patch is a list of operations, got {type(operations).__name__}")
        return cls(Verdict.allow(), json_patch=operations)

    @classmethod
    def object(cls, changed: Dict[str, Any]) -> "Mutation":
        """Allow, changed into ``changed`` (the review's object, modified)."""
        if not isinstance(changed, dict):
            raise TypeError(f"the changed object is a dict, got {type(changed).__name__}")
        return cls(Verdict.allow(), changed_object=dict(changed))

    @classmethod
    def deny(cls, message: str, code: Optional[int] = None) -> "Mutation":
        """Refuse, as :meth:`Verdict.deny`."""
        return cls(Verdict.deny(message, code))

    def warn(self, warning: str) -> "Mutation":
        """The same answer with one more warning."""
        return dataclasses.replace(self, verdict=self.verdict.warn(warning))


__all__ = ["Operation", "FailurePolicy", "AdmissionRule", "Webhook", "UserInfo", "AdmissionReview",
           "Verdict", "Mutation"]
