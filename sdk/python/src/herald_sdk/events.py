"""Kubernetes Events (``events.k8s.io/v1``) about objects, reported by the
plugin (the reporting controller is ``herald.dev/<plugin-name>``). Needs the
``events`` capability in the manifest (``.capability(herald_sdk.EVENTS)``),
granted by the operator.

.. code-block:: python

    from herald_sdk import events

    events.warning(pod, "DisallowedImage", f"image {image} is not allowed")
    events.normal(deployment, "Scaled", "scaled to 3 replicas", action="Scale")

The event is about ``obj`` (its ``apiVersion``, ``kind`` and ``metadata``
name, namespace, uid and resourceVersion); ``related`` names a second
object. The host merges repeats into a series and rate-limits floods about
one object, as client-go's recorder does; a dropped repeat is not an error.
Failures raise :class:`~herald_sdk.kube.KubeError` (``NotGranted`` without
the capability).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

from herald_sdk import _host
from herald_sdk.kinds import GroupVersionKind, as_kind
from herald_sdk.manifest import EVENTS

#: ``reason`` and ``action`` are at most this many characters.
MAX_REASON = 128
#: ``note`` is at most this many bytes (UTF-8); longer notes are cut.
MAX_NOTE_BYTES = 1024

NORMAL = "Normal"
WARNING = "Warning"


@dataclass(frozen=True)
class ObjectReference:
    """The object an event is about."""

    #: Its kind.
    kind: GroupVersionKind
    #: Its namespace; ``None`` for cluster-scoped objects.
    namespace: Optional[str]
    #: Its name.
    name: str
    #: Its UID, when known.
    uid: Optional[str] = None
    #: Its resourceVersion, when known.
    resource_version: Optional[str] = None

    @classmethod
    def of(cls, obj: Any, kind: Any = None) -> "ObjectReference":
        """The reference to ``obj`` (a dict with ``apiVersion``, ``kind`` and
        ``metadata``); ``kind`` overrides the object's own (for an object
        without ``apiVersion``/``kind``). An ``ObjectReference`` is returned as is."""
        if isinstance(obj, ObjectReference):
            return obj
        if not isinstance(obj, Mapping):
            raise TypeError(f"expected a Kubernetes object (a dict), got {type(obj).__name__}")
        if kind is not None:
            gvk = as_kind(kind)
        elif obj.get("apiVersion") and obj.get("kind"):
            gvk = GroupVersionKind.from_api_version(obj["apiVersion"], obj["kind"])
        else:
            raise ValueError("the object has no apiVersion and kind: pass kind= (e.g. kind=Pod)")
        metadata = obj.get("metadata") or {}
        name = metadata.get("name")
        if not name:
            raise ValueError("the object has no metadata.name")
        return cls(gvk, metadata.get("namespace") or None, name, metadata.get("uid") or None,
                   metadata.get("resourceVersion") or None)


@dataclass(frozen=True)
class KubeEvent:
    """One event, as it crosses to the host."""

    #: What the event is about.
    regarding: ObjectReference
    #: A second object involved, if any.
    related: Optional[ObjectReference]
    #: ``"Normal"`` or ``"Warning"``.
    type: str
    #: Why, in UpperCamelCase, e.g. ``DisallowedImage``.
    reason: str
    #: What the plugin did or failed to do, in UpperCamelCase.
    action: str
    #: A human-readable description.
    note: str


def _short(value: str, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string (UpperCamelCase), got {value!r}")
    if len(value) > MAX_REASON:
        raise ValueError(f"{what} is {len(value)} characters, more than {MAX_REASON}")
    return value


def _note(note: str) -> str:
    if not isinstance(note, str):
        raise TypeError(f"note must be a string, got {type(note).__name__}")
    encoded = note.encode("utf-8")
    if len(encoded) <= MAX_NOTE_BYTES:
        return note
    marker = "…".encode("utf-8")
    return encoded[:MAX_NOTE_BYTES - len(marker)].decode("utf-8", errors="ignore") + "…"


def event(obj: Any, type: str, reason: str, note: str, action: Optional[str] = None,
          related: Any = None, kind: Any = None) -> KubeEvent:
    """The event :func:`publish` would send, without sending it. ``action``
    defaults to ``reason``; a note over 1 KiB is cut and ends with ``…``."""
    if type not in (NORMAL, WARNING):
        raise ValueError(f"type must be {NORMAL!r} or {WARNING!r}, got {type!r}")
    return KubeEvent(
        regarding=ObjectReference.of(obj, kind),
        related=None if related is None else ObjectReference.of(related),
        type=type,
        reason=_short(reason, "reason"),
        action=_short(reason if action is None else action, "action"),
        note=_note(note),
    )


def publish(obj: Any, type: str, reason: str, note: str, action: Optional[str] = None,
            related: Any = None, kind: Any = None) -> None:
    """Records an event of ``type`` (``"Normal"`` or ``"Warning"``) about
    ``obj``. See :func:`warning` and :func:`normal`."""
    _host.events_publish(event(obj, type, reason, note, action, related, kind))


def warning(obj: Any, reason: str, note: str, action: Optional[str] = None, related: Any = None,
            kind: Any = None) -> None:
    """Records a Warning event about ``obj``: ``reason`` (UpperCamelCase, at
    most 128 characters), ``note`` (at most 1 KiB, cut beyond), ``action``
    (defaults to ``reason``), ``related`` a second object if any."""
    publish(obj, WARNING, reason, note, action, related, kind)


def normal(obj: Any, reason: str, note: str, action: Optional[str] = None, related: Any = None,
           kind: Any = None) -> None:
    """Records a Normal event about ``obj`` (arguments as :func:`warning`)."""
    publish(obj, NORMAL, reason, note, action, related, kind)


#: The capability to declare in the manifest: ``Manifest(...).capability(events.CAPABILITY)``.
CAPABILITY = EVENTS

__all__ = ["ObjectReference", "KubeEvent", "event", "publish", "warning", "normal", "NORMAL",
           "WARNING", "CAPABILITY", "MAX_REASON", "MAX_NOTE_BYTES"]
