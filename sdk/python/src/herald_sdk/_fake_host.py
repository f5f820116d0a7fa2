"""The in-process stand-in for the host that the SDK calls off wasm; its
state is driven through :mod:`herald_sdk.testing`. Not a public API."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from herald_sdk.errors import InvalidSelector, KubeError, NotFound, NotGranted, NotSubscribed
from herald_sdk.kinds import GroupVersionKind, resource_of


@dataclass(frozen=True)
class LogLine:
    """One line a plugin logged."""

    #: Its severity (a :class:`herald_sdk.log.Level`).
    level: object
    #: Its text.
    message: str


@dataclass(frozen=True)
class KubeCall:
    """One call a plugin made through :mod:`herald_sdk.kube`, as the host
    received it."""

    #: The verb the host checks grants against: ``get``, ``create``,
    #: ``update`` (a replace), ``patch``, ``apply`` or ``delete``.
    verb: str
    #: The kind.
    kind: GroupVersionKind
    #: The namespace; ``None`` for cluster-scoped kinds.
    namespace: Optional[str]
    #: The name (for a create: ``metadata.name`` of the body, or ``""``).
    name: str
    #: ``None``, or ``"status"``.
    subresource: Optional[str] = None
    #: The JSON text sent: the object (create, replace, apply) or the patch.
    body: Optional[str] = None
    #: ``merge``, ``json`` or ``strategic`` for a patch.
    patch_type: Optional[str] = None
    #: The ``force`` flag of an apply.
    force: bool = False
    #: A delete's ``uid`` precondition.
    uid: Optional[str] = None
    #: A delete's ``resource_version`` precondition.
    resource_version: Optional[str] = None
    #: A delete's propagation policy.
    propagation: Optional[str] = None

    @property
    def object(self) -> Any:
        """:attr:`body` parsed (``None`` when there is none)."""
        return None if self.body is None else json.loads(self.body)

    @property
    def key(self) -> str:
        """``namespace/name``, or ``name`` when cluster-scoped."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@dataclass
class Script:
    """One scripted answer: the calls it matches (``None`` matches anything)
    and what they get."""

    verb: Optional[str]
    kind: Optional[GroupVersionKind]
    namespace: Optional[str]
    name: Optional[str]
    subresource: Optional[str]
    returns: Optional[str]
    raises: Optional[KubeError]
    #: Uses left; ``None`` is forever.
    times: Optional[int]

    def matches(self, call: KubeCall) -> bool:
        return ((self.verb is None or self.verb == call.verb)
                and (self.kind is None or self.kind == call.kind)
                and (self.namespace is None or self.namespace == call.namespace)
                and (self.name is None or self.name == call.name)
                and (self.subresource is None or self.subresource == call.subresource))


@dataclass
class FakeHostState:
    """Everything the stand-in host holds."""

    config: Optional[str] = None
    logs: List[LogLine] = field(default_factory=list)
    subscribed: Set[GroupVersionKind] = field(default_factory=set)
    #: Objects by kind, then by (namespace, name), as JSON text.
    cache: Dict[GroupVersionKind, Dict[Tuple[Optional[str], str], str]] = field(default_factory=dict)
    #: Every kube call, in order.
    kube_calls: List[KubeCall] = field(default_factory=list)
    #: Scripted answers, first match wins.
    kube_scripts: List[Script] = field(default_factory=list)
    #: Every event published (``herald_sdk.events.KubeEvent``), in order.
    events: List[Any] = field(default_factory=list)
    #: Scripted failures of ``events.publish``, used in order.
    event_failures: List[Script] = field(default_factory=list)
    #: When set (a ``Manifest``), calls outside its write rules and events
    #: without its ``events`` capability raise NotGranted, as the host would.
    manifest: Any = None


STATE = FakeHostState()


def reset() -> None:
    global STATE
    STATE = FakeHostState()


def log(level, message: str) -> None:
    STATE.logs.append(LogLine(level, message))


def config() -> Optional[str]:
    return STATE.config


def _visible(kind: GroupVersionKind) -> None:
    if kind not in STATE.subscribed:
        raise NotSubscribed(kind)


def cache_get(kind: GroupVersionKind, namespace: Optional[str], name: str) -> Optional[str]:
    _visible(kind)
    return STATE.cache.get(kind, {}).get((namespace, name))


def cache_list(kind: GroupVersionKind, namespace: Optional[str], label_selector: Optional[str]) -> List[str]:
    requirements = parse_selector(label_selector or "")
    _visible(kind)
    found = []
    for (object_namespace, _), text in sorted(STATE.cache.get(kind, {}).items(), key=lambda item: (item[0][0] or "", item[0][1])):
        if namespace is not None and object_namespace != namespace:
            continue
        labels = ((json.loads(text).get("metadata") or {}).get("labels")) or {}
        if all(requirement(labels) for requirement in requirements):
            found.append(text)
    return found


def _not_granted(call: KubeCall) -> Optional[str]:
    """Why ``call`` is outside the declared write rules, or ``None``."""
    manifest = STATE.manifest
    if manifest is None:
        return None
    for rule in manifest.write_rules:
        if (rule.group == call.kind.group and rule.kind == call.kind.kind
                and call.verb in (verb.value for verb in rule.verb_list)
                and rule.subresource_name == call.subresource
                and ("*" in rule.namespace_list or (call.namespace or "*") in rule.namespace_list)):
            return None
    where = f"namespace {call.namespace}" if call.namespace else "cluster scope"
    subresource = f" subresource {call.subresource}" if call.subresource else ""
    return (f"no write rule allows {call.verb} on {call.kind.group or 'core'}/{call.kind.kind}{subresource} "
            f"in {where}")


def _answer(call: KubeCall, default: Callable[[], Optional[str]]) -> Optional[str]:
    """Records ``call`` and answers it: NotGranted outside the declared rules,
    else the first matching script, else ``default()``."""
    STATE.kube_calls.append(call)
    refusal = _not_granted(call)
    if refusal is not None:
        raise NotGranted(refusal)
    for script in STATE.kube_scripts:
        if script.matches(call):
            if script.times is not None:
                script.times -= 1
                if script.times == 0:
                    STATE.kube_scripts.remove(script)
            if script.raises is not None:
                raise script.raises
            return script.returns if script.returns is not None else default()
    return default()


def _not_found(call: KubeCall) -> str:
    group = f".{call.kind.group}" if call.kind.group else ""
    raise NotFound(f'{resource_of(call.kind)}{group} "{call.name}" not found')


def kube_get(target) -> str:
    call = KubeCall("get", target.kind, target.namespace, target.name, target.subresource)
    return _answer(call, lambda: _not_found(call))


def kube_create(kind: GroupVersionKind, namespace: Optional[str], body: str) -> str:
    name = (json.loads(body).get("metadata") or {}).get("name") or ""
    return _answer(KubeCall("create", kind, namespace, name, body=body), lambda: body)


def kube_replace(target, body: str) -> str:
    call = KubeCall("update", target.kind, target.namespace, target.name, target.subresource, body=body)
    return _answer(call, lambda: body)


def kube_patch(target, patch_type: str, patch: str) -> str:
    call = KubeCall("patch", target.kind, target.namespace, target.name, target.subresource, body=patch,
                    patch_type=patch_type)
    return _answer(call, lambda: patch if patch_type != "json" else _identity(call))


def _identity(call: KubeCall) -> str:
    """The object named by ``call`` with nothing but its identity: the
    unscripted answer to a JSON patch, whose body is not an object."""
    metadata = {"name": call.name, **({"namespace": call.namespace} if call.namespace else {})}
    return json.dumps({"apiVersion": call.kind.api_version, "kind": call.kind.kind, "metadata": metadata})


def kube_apply(target, body: str, force: bool) -> str:
    call = KubeCall("apply", target.kind, target.namespace, target.name, target.subresource, body=body, force=force)
    return _answer(call, lambda: body)


def kube_delete(target, uid: Optional[str], resource_version: Optional[str], propagation: Optional[str]) -> None:
    call = KubeCall("delete", target.kind, target.namespace, target.name, target.subresource, uid=uid,
                    resource_version=resource_version, propagation=propagation)
    _answer(call, lambda: None)


def events_publish(event) -> None:
    STATE.events.append(event)
    manifest = STATE.manifest
    if manifest is not None and "events" not in manifest.capabilities:
        raise NotGranted("the events capability is not declared in the manifest")
    if STATE.event_failures:
        failure = STATE.event_failures[0]
        if failure.times is not None:
            failure.times -= 1
            if failure.times == 0:
                STATE.event_failures.pop(0)
        raise failure.raises


_WORD = re.compile(r"^[A-Za-z0-9][-A-Za-z0-9_./]*$")


def _word(text: str) -> str:
    text = text.strip()
    if not _WORD.match(text):
        raise InvalidSelector(f"invalid label key or value {text!r}")
    return text


def _value_set(text: str) -> List[str]:
    text = text.strip()
    if not (text.startswith("(") and text.endswith(")")):
        raise InvalidSelector(f"expected a parenthesised set, got {text!r}")
    return [_word(value) for value in text[1:-1].split(",")]


def parse_selector(selector: str) -> List[Callable[[Dict[str, str]], bool]]:
    """The requirements of a Kubernetes label selector (``a=b``, ``a==b``,
    ``a!=b``, ``a in (x,y)``, ``a notin (x)``, ``a``, ``!a``, joined by
    commas), each a predicate over a label map. Raises InvalidSelector."""
    parts, depth, start = [], 0, 0
    for index, character in enumerate(selector):
        if character == "(":
            depth += 1
        elif character == ")":
            depth -= 1
            if depth < 0:
                raise InvalidSelector(f"unbalanced ')' in {selector!r}")
        elif character == "," and depth == 0:
            parts.append(selector[start:index])
            start = index + 1
    if depth != 0:
        raise InvalidSelector(f"unbalanced '(' in {selector!r}")
    parts.append(selector[start:])
    requirements = []
    for part in (part.strip() for part in parts):
        if not part:
            continue
        if "!=" in part:
            key, value = (_word(side) for side in part.split("!=", 1))
            requirements.append(lambda labels, k=key, v=value: labels.get(k) != v)
        elif "=" in part:
            key, _, value = part.replace("==", "=", 1).partition("=")
            key, value = _word(key), _word(value)
            requirements.append(lambda labels, k=key, v=value: labels.get(k) == v)
        elif " notin " in part:
            key, values = part.split(" notin ", 1)
            key, values = _word(key), _value_set(values)
            requirements.append(lambda labels, k=key, vs=values: labels.get(k) not in vs)
        elif " in " in part:
            key, values = part.split(" in ", 1)
            key, values = _word(key), _value_set(values)
            requirements.append(lambda labels, k=key, vs=values: labels.get(k) in vs)
        elif part.startswith("!"):
            key = _word(part[1:])
            requirements.append(lambda labels, k=key: k not in labels)
        else:
            key = _word(part)
            requirements.append(lambda labels, k=key: k in labels)
    return requirements
