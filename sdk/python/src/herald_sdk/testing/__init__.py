"""An in-process stand-in for the host, for unit-testing plugins with
pytest, no wasm involved. Off wasm, every host call of the SDK (log, cache
and index look-ups, config, kube, events, metrics, workqueue, deadline and
HTTP) lands here instead of in the host.

Metric updates are recorded (:func:`metric_updates`) and summed per series
(:func:`metric`, :func:`metrics`, :func:`observations`); :func:`declare`
makes the stand-in check them against the manifest's definitions as the
host does, and serve its indexes to :func:`herald_sdk.cache.by_index`.
Requeue requests are recorded (:func:`requeues`). HTTP requests are
recorded and answered by :mod:`herald_sdk.testing.http`'s scripts.

Kubernetes calls and events are recorded (:func:`take_kube_calls`,
:func:`take_events`) and answered from scripts (:func:`script_kube`,
:func:`script_events`); unscripted, a ``get`` raises
:class:`~herald_sdk.kube.NotFound`, a create, replace, merge or strategic
patch, or apply returns the body it was sent (a JSON patch: the object's
``apiVersion``, ``kind`` and ``metadata`` name and namespace only), a delete
and a publish succeed.
:func:`enforce` makes the stand-in refuse, as the host does, calls outside
the manifest's write rules and events without the ``events`` capability.

State is module-wide: call :func:`reset` at the start of each test (an
autouse fixture in ``conftest.py`` does it for a whole suite)::

    import pytest
    from herald_sdk import testing

    @pytest.fixture(autouse=True)
    def fake_host():
        testing.reset()

    def test_counts_adds():
        plugin = Counter()
        plugin.on_add(testing.added({"apiVersion": "v1", "kind": "Pod",
                                     "metadata": {"name": "web-0", "namespace": "shop"}}))
        assert testing.take_messages() == ["counted key=shop/web-0 total=1"]

Admission decisions are tested the same way: :func:`creating`,
:func:`updating` and :func:`deleting` build the
:class:`~herald_sdk.admission.AdmissionReview` the API server would send,
for ``validate`` and ``mutate``::

    def test_refuses_latest():
        verdict = NoLatest().validate(testing.creating(pod("web:latest")))
        assert not verdict.allowed

Objects are plain dicts (or :class:`~herald_sdk.kinds.KubeObject`) with
``apiVersion``, ``kind`` and ``metadata``; the kind is read from them unless
given.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple, Union

from herald_sdk import _fake_host
from herald_sdk._fake_host import KubeCall, LogLine, MetricUpdate, Script
from herald_sdk.testing import http
from herald_sdk.admission import AdmissionReview, Operation, UserInfo
from herald_sdk.errors import KubeError, failure_message
from herald_sdk.event import Context, Event, Update
from herald_sdk.handler import Handler
from herald_sdk.manifest import Manifest
from herald_sdk.kinds import GroupVersionKind, as_kind, resource_of

__all__ = [
    "LogLine", "reset", "set_config", "set_config_json", "clear_config", "take_logs",
    "take_messages", "subscribe", "cache_insert", "cache_remove", "context_for", "added",
    "updated", "deleted", "listed", "resynced", "vanished", "read_events", "deliver",
    "creating", "updating", "deleting",
    "KubeCall", "take_kube_calls", "script_kube", "take_events", "script_events", "enforce",
    "declare", "MetricUpdate", "metric_updates", "take_metric_updates", "metrics", "metric", "observations",
    "requeues", "take_requeues", "set_remaining_ms", "http",
]


def reset() -> None:
    """Forgets the configuration, the logs, the subscriptions, the cache,
    the recorded kube calls, events, metric updates, requeues and HTTP
    requests, the scripts, :func:`declare` and :func:`enforce`. When the
    plugin imports ``urllib.request``, (re)installs the opener that sends
    through the SDK (as the build does in the component)."""
    _fake_host.reset()
    if "urllib.request" in sys.modules:
        from herald_sdk.http import install_urllib

        install_urllib()


def declare(manifest: Union[Manifest, type]) -> None:
    """Declares the manifest's subscriptions, metrics and indexes to the
    stand-in (a :class:`~herald_sdk.Manifest` or a handler class): from now
    on the kinds it subscribes to are visible to cache look-ups (empty until
    :func:`cache_insert`), :func:`herald_sdk.cache.by_index` looks up its
    indexes (an index not
    declared is unknown, as on the host), and every metric update is checked
    as the host does: one the host would drop (a metric not defined, the
    wrong kind of update, the wrong number of label values, a negative
    counter increment, NaN, a series over the limit of 1,000) is recorded
    but not counted, and logged as a warning.

    Raises ``ValueError`` when the host would not load the plugin for its
    metric or index definitions (:meth:`~herald_sdk.Manifest.problems`)."""
    if isinstance(manifest, type):
        manifest = manifest.manifest()
    if not isinstance(manifest, Manifest):
        raise TypeError(f"declare takes a Manifest or a handler class, got {manifest!r}")
    problems = [problem for problem in manifest.problems() if problem.startswith(("metric", "counter", "histogram",
                                                                                 "index"))]
    if problems:
        raise ValueError("the host would not load this plugin: " + "; ".join(problems))
    _fake_host.STATE.declared = manifest
    for subscription in manifest.subscriptions:
        _fake_host.STATE.subscribed.add(subscription.kind)
    for index in manifest.indexes:
        _fake_host.STATE.subscribed.add(index.kind)


def metric_updates() -> List[MetricUpdate]:
    """Every metric update since the last :func:`take_metric_updates`, kept
    (those dropped as invalid included)."""
    return list(_fake_host.STATE.metric_updates)


def take_metric_updates() -> List[MetricUpdate]:
    """Every metric update since the last take, removed; the values are kept."""
    updates, _fake_host.STATE.metric_updates = _fake_host.STATE.metric_updates, []
    return updates


def metrics() -> Dict[Tuple[str, Tuple[str, ...]], float]:
    """Every counter and gauge series, ``(name, label values)``, with its value."""
    return dict(_fake_host.STATE.metric_values)


def metric(name: str, *label_values: str) -> Optional[float]:
    """The value of the counter or gauge series ``name{label_values}``, or
    ``None`` if it was never updated: ``metric("alerts_total", "shop")``."""
    return _fake_host.STATE.metric_values.get((name, tuple(label_values)))


def observations(name: str, *label_values: str) -> List[float]:
    """The observations of the histogram series ``name{label_values}``, in order."""
    return list(_fake_host.STATE.observations.get((name, tuple(label_values)), []))


def requeues() -> List[float]:
    """Every :func:`herald_sdk.workqueue.requeue_after` request since the
    last :func:`take_requeues`, in seconds, kept. The host honours the last
    one of a call."""
    return [delay / 1000 for delay in _fake_host.STATE.requeues]


def take_requeues() -> List[float]:
    """Every requeue request since the last take, in seconds, removed."""
    taken = requeues()
    _fake_host.STATE.requeues = []
    return taken


def set_clusters(names) -> None:
    """The clusters the plugin runs on, as :func:`herald_sdk.cluster.names`
    answers (``["default"]`` after :func:`reset`); the first is the call's
    cluster until :func:`set_cluster` says otherwise."""
    _fake_host.STATE.clusters = [str(name) for name in names]


def set_cluster(name: str) -> None:
    """Makes ``name`` the cluster of the calls that follow, as the host does
    for each notification (and ends any target the plugin set): what
    :func:`herald_sdk.cluster.current` answers, and where the recorded kube
    calls say they went (``KubeCall.cluster``)."""
    _fake_host.STATE.cluster = str(name)
    _fake_host.STATE.target = None


def set_remaining_ms(milliseconds: int) -> None:
    """What :func:`herald_sdk.deadline.remaining_ms` answers (1000 after :func:`reset`)."""
    _fake_host.STATE.remaining_ms = int(milliseconds)


def set_config(value: Any) -> None:
    """Sets the configuration :func:`herald_sdk.config.get` returns, given
    as a Python value (serialized to JSON, as the host would send it)."""
    _fake_host.STATE.config = json.dumps(value)


def set_config_json(text: str) -> None:
    """Sets the configuration as raw JSON text (to test what a plugin does
    with a malformed one, say)."""
    _fake_host.STATE.config = text


def clear_config() -> None:
    """Removes the configuration: :func:`herald_sdk.config.get` returns ``None``."""
    _fake_host.STATE.config = None


def take_logs() -> List[LogLine]:
    """Every line logged since the last take, removed."""
    logs, _fake_host.STATE.logs = _fake_host.STATE.logs, []
    return logs


def take_messages() -> List[str]:
    """The text of every line logged since the last take, removed."""
    return [line.message for line in take_logs()]


def take_kube_calls() -> List[KubeCall]:
    """Every :mod:`herald_sdk.kube` call since the last take, in order,
    removed; refused and failed calls included."""
    calls, _fake_host.STATE.kube_calls = _fake_host.STATE.kube_calls, []
    return calls


def script_kube(verb: Optional[str] = None, kind: Any = None, name: Optional[str] = None,
                namespace: Optional[str] = None, subresource: Optional[str] = None, *,
                returns: Any = None, raises: Optional[KubeError] = None,
                times: Optional[int] = None) -> None:
    """Scripts the answer to the kube calls matching ``verb`` (``get``,
    ``create``, ``update``, ``patch``, ``apply``, ``delete``), ``kind``,
    ``name``, ``namespace`` and ``subresource`` (each ``None`` matches
    anything): return ``returns`` (a dict, or JSON text) or raise ``raises``
    (a :class:`~herald_sdk.kube.KubeError`), ``times`` times (``None``:
    every time). Scripts are tried in the order given; the first that
    matches answers. A script with neither ``returns`` nor ``raises`` gives
    the unscripted answer::

        testing.script_kube("get", Deployment, "web", returns=web)
        testing.script_kube("update", raises=kube.Conflict("the object has been modified"), times=1)
    """
    if returns is not None and raises is not None:
        raise ValueError("script_kube takes returns or raises, not both")
    if raises is not None and not isinstance(raises, KubeError):
        raise TypeError(f"raises must be a KubeError (e.g. kube.Conflict('...')), got {raises!r}")
    if times is not None and times < 1:
        raise ValueError("times must be at least 1 (or None for every time)")
    text = returns if returns is None or isinstance(returns, str) else json.dumps(returns)
    _fake_host.STATE.kube_scripts.append(Script(
        verb, None if kind is None else as_kind(kind), namespace, name, subresource, text, raises, times))


def take_events() -> list:
    """Every event published since the last take
    (:class:`herald_sdk.events.KubeEvent`), in order, removed; refused ones
    included."""
    published, _fake_host.STATE.events = _fake_host.STATE.events, []
    return published


def script_events(raises: KubeError, times: Optional[int] = None) -> None:
    """Makes the next ``times`` publishes (``None``: all) raise ``raises``,
    e.g. ``kube.TooManyRequests("event rate limit", retry_after_ms=1000)``."""
    if not isinstance(raises, KubeError):
        raise TypeError(f"raises must be a KubeError, got {raises!r}")
    _fake_host.STATE.event_failures.append(Script(None, None, None, None, None, None, raises, times))


def enforce(manifest: Union[Manifest, type, None]) -> None:
    """Refuses, as the host does, kube calls outside ``manifest``'s write
    rules and events without its ``events`` capability, with
    :class:`~herald_sdk.kube.NotGranted` (the call is still recorded).
    ``manifest`` is a :class:`~herald_sdk.Manifest` or a handler class (its
    ``manifest()`` is called); ``None`` stops enforcing. (The operator's
    grant is assumed to cover the manifest; the host refuses to load a
    plugin whose manifest asks for more.)"""
    if isinstance(manifest, type):
        manifest = manifest.manifest()
    if manifest is not None and not isinstance(manifest, Manifest):
        raise TypeError(f"enforce takes a Manifest, a handler class or None, got {manifest!r}")
    _fake_host.STATE.manifest = manifest


def subscribe(kind: Any) -> None:
    """Makes ``kind`` visible to cache look-ups, as subscribing to it would.
    Kinds never subscribed to raise :class:`~herald_sdk.NotSubscribed`."""
    _fake_host.STATE.subscribed.add(as_kind(kind))


def _kind_of(obj: Mapping[str, Any], kind: Any) -> GroupVersionKind:
    if kind is not None:
        return as_kind(kind)
    api_version, kind_name = obj.get("apiVersion"), obj.get("kind")
    if not api_version or not kind_name:
        raise ValueError("the object has no apiVersion and kind: pass kind= (e.g. kind=Pod)")
    return GroupVersionKind.from_api_version(api_version, kind_name)


def _identity(obj: Mapping[str, Any]) -> Tuple[Optional[str], str, str]:
    metadata = obj.get("metadata") or {}
    return metadata.get("namespace") or None, metadata.get("name") or "", metadata.get("resourceVersion") or ""


def cache_insert(obj: Mapping[str, Any], kind: Any = None) -> None:
    """Puts ``obj`` in the cache (replacing one with the same namespace and
    name) and subscribes to its kind (read from ``apiVersion`` and ``kind``
    unless given)."""
    gvk = _kind_of(obj, kind)
    namespace, name, _ = _identity(obj)
    _fake_host.STATE.subscribed.add(gvk)
    _fake_host.STATE.cache.setdefault(gvk, {})[(namespace, name)] = json.dumps(obj)


def cache_remove(kind: Any, namespace: Optional[str], name: str) -> None:
    """Removes the object ``namespace/name`` of ``kind`` from the cache, if
    there (``namespace`` ``None`` for a cluster-scoped kind)."""
    _fake_host.STATE.cache.get(as_kind(kind), {}).pop((namespace, name), None)


def context_for(obj: Mapping[str, Any], kind: Any = None, resource: Optional[str] = None) -> Context:
    """The context the host would send with ``obj``: its kind, resource, key
    and resource version; no flags set."""
    gvk = _kind_of(obj, kind)
    namespace, name, resource_version = _identity(obj)
    return Context(
        kind=gvk,
        resource=resource or resource_of(gvk),
        key=f"{namespace}/{name}" if namespace else name,
        resource_version=resource_version,
    )


def _with_flags(context: Context, **flags: bool) -> Context:
    return Context(**{**vars(context), **flags}) if flags else context


def added(obj: Mapping[str, Any], kind: Any = None) -> Event:
    """The event ``on_add`` would receive for ``obj``."""
    return Event(context_for(obj, kind), json.dumps(obj))


def updated(old: Mapping[str, Any], new: Mapping[str, Any], kind: Any = None) -> Update:
    """The event ``on_update`` would receive for a change from ``old`` to ``new``."""
    return Update(context_for(new, kind), json.dumps(old), json.dumps(new))


def deleted(obj: Mapping[str, Any], kind: Any = None) -> Event:
    """The event ``on_delete`` would receive for ``obj``."""
    return Event(context_for(obj, kind), json.dumps(obj))


def listed(obj: Mapping[str, Any], kind: Any = None) -> Event:
    """The add replaying ``obj`` to a plugin that joined after the informer
    synced (``is_initial_list`` set)."""
    return Event(_with_flags(context_for(obj, kind), is_initial_list=True), json.dumps(obj))


def resynced(obj: Mapping[str, Any], kind: Any = None) -> Update:
    """The periodic resync update for ``obj`` (``is_resync`` set, old and new equal)."""
    text = json.dumps(obj)
    return Update(_with_flags(context_for(obj, kind), is_resync=True), text, text)


def vanished(obj: Mapping[str, Any], kind: Any = None) -> Event:
    """The delete inferred from a relist, ``obj`` being the last known state
    (``final_state_unknown`` set)."""
    return Event(_with_flags(context_for(obj, kind), final_state_unknown=True), json.dumps(obj))


def _review(operation: Operation, obj: Optional[Mapping[str, Any]], old: Optional[Mapping[str, Any]],
            kind: Any) -> AdmissionReview:
    present = obj if obj is not None else old
    gvk = _kind_of(present, kind)
    namespace, name, _ = _identity(present)
    return AdmissionReview(
        uid="00000000-0000-0000-0000-000000000001",
        kind=gvk,
        resource=resource_of(gvk),
        name=name,
        namespace=namespace or "",
        operation=operation,
        user_info=UserInfo(username="admin"),
        object_json=None if obj is None else json.dumps(obj),
        old_object_json=None if old is None else json.dumps(old),
    )


def creating(obj: Mapping[str, Any], kind: Any = None) -> AdmissionReview:
    """The review the API server sends when ``obj`` is created, by user
    ``admin`` (for ``validate`` and ``mutate``); the kind is read from
    ``obj`` unless given."""
    return _review(Operation.CREATE, obj, None, kind)


def updating(old: Mapping[str, Any], new: Mapping[str, Any], kind: Any = None) -> AdmissionReview:
    """The review of an update from ``old`` to ``new``."""
    return _review(Operation.UPDATE, new, old, kind)


def deleting(obj: Mapping[str, Any], kind: Any = None) -> AdmissionReview:
    """The review of the deletion of ``obj`` (its ``object`` absent, its
    ``old_object`` the object)."""
    return _review(Operation.DELETE, None, obj, kind)


Notification = Tuple[str, Union[Event, Update]]


def read_events(path: str) -> Iterator[Notification]:
    """The notifications of an event file in the format ``herald plugin
    replay --events`` reads (one JSON object per line: ``type`` ``add`` /
    ``update`` / ``delete``, ``object``, ``old`` for updates, optional
    ``initial``, ``resync`` and ``finalStateUnknown`` flags; blank lines
    skipped), as ``("add" | "update" | "delete", event)`` pairs.

    kubectl's ``ADDED``/``MODIFIED``/``DELETED`` records (``--output-watch-events``,
    one per line) read too; their updates carry the object as both old and new."""
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            record: Dict[str, Any] = json.loads(line)
            kind = str(record.get("type", "")).lower()
            kind = {"added": "add", "modified": "update", "deleted": "delete"}.get(kind, kind)
            obj = record.get("object")
            if kind not in ("add", "update", "delete") or not isinstance(obj, dict):
                raise ValueError(f"{path}:{number}: expected type add|update|delete and an object")
            flags = {name: True for name, field in (("is_initial_list", "initial"), ("is_resync", "resync"),
                                                   ("final_state_unknown", "finalStateUnknown"))
                     if record.get(field)}
            context = _with_flags(context_for(obj), **flags)
            if kind == "update":
                yield kind, Update(context, json.dumps(record.get("old", obj)), json.dumps(obj))
            else:
                yield kind, Event(context, json.dumps(obj))


def deliver(plugin: Handler, notification: Notification) -> Optional[str]:
    """Calls the handler method for one notification as the component
    would: returns ``None`` on success, or the ``err`` message the host
    would record when the handler raises an ``Exception``."""
    kind, event = notification
    try:
        getattr(plugin, f"on_{kind}")(event)
    except Exception as error:  # the component turns every Exception into err(string)
        return failure_message(error)
    return None
