"""The in-process stand-in for the host that the SDK calls off wasm; its
state is driven through :mod:`herald_sdk.testing`. Not a public API."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from herald_sdk.errors import InvalidSelector, KubeError, NotFound, NotGranted, NotSubscribed, UnknownIndex
from herald_sdk.http import HttpError, Hop, Response, origin
from herald_sdk.kinds import GroupVersionKind, resource_of

#: How many series a plugin may hold, as the host's default.
SERIES_LIMIT = 1000


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
    #: The cluster it went to: the call's, or the one targeted.
    cluster: str = field(default_factory=lambda: cluster_current())

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


@dataclass(frozen=True)
class MetricUpdate:
    """One metric update as it was handed to the host."""

    #: ``add``, ``set`` or ``observe``.
    op: str
    #: The metric's name, as declared.
    name: str
    #: One value per declared label, in order.
    label_values: Tuple[str, ...]
    #: The value added, set or observed.
    value: float


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request (one hop of it) as the host received it."""

    #: ``GET``, ``POST``, ...
    method: str
    #: The URL.
    url: str
    #: The headers as sent, in order.
    headers: Tuple[Tuple[str, str], ...]
    #: The body.
    body: bytes
    #: The connect, first-byte and between-bytes timeout hints, in milliseconds.
    timeouts_ms: Tuple[Optional[int], Optional[int], Optional[int]]

    def header(self, name: str) -> Optional[str]:
        """The first value of header ``name`` (any case), or ``None``."""
        return next((value for key, value in self.headers if key.lower() == name.lower()), None)

    @property
    def text(self) -> str:
        """The body as text."""
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


@dataclass
class HttpScript:
    """One scripted HTTP answer: a URL pattern (a prefix, or a glob with
    ``*``) and a response or an error; ``times`` uses left (``None``: forever)."""

    pattern: str
    answer: Any
    times: Optional[int]

    def matches(self, url: str) -> bool:
        if "*" in self.pattern:
            return re.fullmatch(".*".join(map(re.escape, self.pattern.split("*"))), url) is not None
        return url.startswith(self.pattern)


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
    #: The manifest given to ``testing.declare``: its metrics are checked and
    #: its indexes served.
    declared: Any = None
    #: Every metric update, valid or not.
    metric_updates: List[MetricUpdate] = field(default_factory=list)
    #: Counter and gauge values by (name, label values).
    metric_values: Dict[Tuple[str, Tuple[str, ...]], float] = field(default_factory=dict)
    #: Histogram observations by (name, label values).
    observations: Dict[Tuple[str, Tuple[str, ...]], List[float]] = field(default_factory=dict)
    #: Every requeue request, in milliseconds.
    requeues: List[int] = field(default_factory=list)
    #: What ``deadline.remaining_ms`` answers.
    remaining_ms: int = 1000
    #: The clusters the plugin runs on; empty: ``default`` alone.
    clusters: List[str] = field(default_factory=list)
    #: The cluster of the call under way; ``None``: the first of ``clusters``.
    cluster: Optional[str] = None
    #: The cluster the plugin targeted, if it did.
    target: Optional[str] = None
    #: Every HTTP request (hop), in order.
    http_requests: List[RecordedRequest] = field(default_factory=list)
    #: Scripted HTTP answers; the last added that matches wins, one-shot ones first.
    http_scripts: List[HttpScript] = field(default_factory=list)
    #: Origins granted; empty: every origin.
    http_granted: List[str] = field(default_factory=list)
    #: Whether an unscripted request is denied instead of answered 404.
    http_deny_unscripted: bool = False


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


def index_lookup(name: str, value: str, namespace: Optional[str]) -> List[str]:
    indexes = {index.name: index for index in (STATE.declared.indexes if STATE.declared else [])}
    index = indexes.get(name)
    if index is None:
        raise UnknownIndex(f"{name} (the test host knows the indexes of the manifest given to testing.declare)")
    found = []
    for (object_namespace, object_name), text in STATE.cache.get(index.kind, {}).items():
        if namespace is not None and object_namespace != namespace:
            continue
        if value in index.values(json.loads(text)):
            found.append(((object_namespace or ""), object_name, text))
    return [text for _, _, text in sorted(found)]


def _metric_problem(update: MetricUpdate) -> Optional[str]:
    """Why the host would drop ``update``, if it would."""
    name = update.name
    if update.value != update.value:
        return f"metric {name}: NaN"
    if STATE.declared is None:
        return None
    metric = next((metric for metric in STATE.declared.metrics if metric.name == name), None)
    if metric is None:
        return f"metric {name} is not defined in the manifest"
    allowed = {"counter": ("add",), "gauge": ("add", "set"), "histogram": ("observe",)}[metric.kind.value]
    if update.op not in allowed:
        return f"metric {name}: {update.op} on a {metric.kind.value}"
    if len(update.label_values) != len(metric.label_names):
        return f"metric {name}: {len(update.label_values)} label values for {len(metric.label_names)} labels"
    if metric.kind.value == "counter" and update.value < 0:
        return f"metric {name}: a counter cannot go down ({update.value})"
    series = (name, update.label_values)
    known = series in STATE.metric_values or series in STATE.observations
    if not known and len(STATE.metric_values) + len(STATE.observations) >= SERIES_LIMIT:
        return f"metric {name}: over the limit of {SERIES_LIMIT} series"
    return None


def metrics_update(op: str, name: str, label_values: List[str], value: float) -> None:
    update = MetricUpdate(op, name, tuple(label_values), value)
    STATE.metric_updates.append(update)
    problem = _metric_problem(update)
    if problem is not None:
        from herald_sdk.log import Level

        log(Level.WARN, f"metric update dropped: {problem}")
        return
    series = (name, update.label_values)
    if op == "observe":
        STATE.observations.setdefault(series, []).append(value)
    elif op == "set":
        STATE.metric_values[series] = value
    else:
        STATE.metric_values[series] = STATE.metric_values.get(series, 0.0) + value


def requeue_after(delay_ms: int) -> None:
    STATE.requeues.append(delay_ms)


def remaining_ms() -> int:
    return STATE.remaining_ms


#: The default cluster's name in the stand-in host.
DEFAULT_CLUSTER = "default"


def cluster_names() -> List[str]:
    return sorted(STATE.clusters) if STATE.clusters else [DEFAULT_CLUSTER]


def cluster_current() -> str:
    if STATE.target is not None:
        return STATE.target
    if STATE.cluster is not None:
        return STATE.cluster
    return STATE.clusters[0] if STATE.clusters else DEFAULT_CLUSTER


def cluster_target(name: Optional[str]) -> Optional[str]:
    """Targets ``name`` (``None``: back to the call's cluster); the refusal's
    message, or ``None``."""
    if name is None:
        STATE.target = None
        return None
    if name not in cluster_names():
        return (f"this plugin is not delivered notifications from a cluster named {name!r}: it may "
                f"target only its own clusters ({', '.join(cluster_names())})")
    STATE.target = name
    return None


def http_send(hop: Hop) -> Response:
    STATE.http_requests.append(RecordedRequest(hop.method, hop.url, tuple(hop.headers), hop.body, hop.timeouts_ms))
    if STATE.http_granted and origin(hop.url) not in STATE.http_granted:
        raise HttpError("denied")
    once = [script for script in STATE.http_scripts if script.times is not None and script.matches(hop.url)]
    forever = [script for script in STATE.http_scripts if script.times is None and script.matches(hop.url)]
    if once:
        script = once[0]
        script.times -= 1
        if script.times == 0:
            STATE.http_scripts.remove(script)
        answer = script.answer
    elif forever:
        answer = forever[-1].answer
    elif STATE.http_deny_unscripted:
        answer = HttpError("denied")
    else:
        answer = Response(404)
    if isinstance(answer, HttpError):
        raise HttpError(answer.kind, answer.detail)
    if len(answer.body) > hop.max_response_bytes:
        raise HttpError("too-large", f"a response body of {len(answer.body)} bytes; "
                                     f"at most {hop.max_response_bytes} are read")
    response = Response(answer.status, answer.body, answer.headers)
    return response


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
