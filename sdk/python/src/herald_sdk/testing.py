"""An in-process stand-in for the host, for unit-testing plugins with
pytest, no wasm involved. Off wasm, the SDK's log, cache and config calls
land here instead of in the host.

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

Objects are plain dicts (or :class:`~herald_sdk.kinds.KubeObject`) with
``apiVersion``, ``kind`` and ``metadata``; the kind is read from them unless
given.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple, Union

from herald_sdk import _fake_host
from herald_sdk._fake_host import LogLine
from herald_sdk.errors import failure_message
from herald_sdk.event import Context, Event, Update
from herald_sdk.handler import Handler
from herald_sdk.kinds import GroupVersionKind, as_kind, resource_of

__all__ = [
    "LogLine", "reset", "set_config", "set_config_json", "clear_config", "take_logs",
    "take_messages", "subscribe", "cache_insert", "cache_remove", "context_for", "added",
    "updated", "deleted", "listed", "resynced", "vanished", "read_events", "deliver",
]


def reset() -> None:
    """Forgets the configuration, the logs, the subscriptions and the cache."""
    _fake_host.reset()


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


def cache_remove(kind: Any, name: str, namespace: Optional[str] = None) -> None:
    """Removes the object ``namespace/name`` of ``kind`` from the cache, if there."""
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
