"""The notifications a handler receives: :class:`Event` for adds and
deletes, :class:`Update` for updates, both carrying a :class:`Context`."""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass
from typing import Optional, Type, TypeVar

from herald_sdk.errors import HandlerError
from herald_sdk.kinds import GroupVersionKind, KubeObject, view_for

View = TypeVar("View", bound=KubeObject)


@dataclass(frozen=True)
class Context:
    """Facts about the notification being delivered, as the host sent them."""

    #: The subscription's kind.
    kind: GroupVersionKind
    #: The plural resource name the kind resolved to, e.g. ``pods``.
    resource: str
    #: The object's key: ``namespace/name``, or ``name`` when cluster-scoped.
    key: str
    #: The ``metadata.resourceVersion`` of the (new) object.
    resource_version: str
    #: A synthetic add replaying the cache to a plugin that joined (or
    #: re-joined) after the informer had synced.
    is_initial_list: bool = False
    #: A periodic resync update: old and new are the same state.
    is_resync: bool = False
    #: A delete inferred from a relist: the object vanished while the watch
    #: was down and the state passed is the last one the cache knew.
    final_state_unknown: bool = False

    @property
    def namespace(self) -> Optional[str]:
        """The namespace part of the key; ``None`` when cluster-scoped."""
        namespace, slash, _ = self.key.partition("/")
        return namespace if slash else None

    @property
    def name(self) -> str:
        """The name part of the key."""
        return self.key.rpartition("/")[2]


def _decode(what: str, text: str, view: type) -> KubeObject:
    try:
        value = json.loads(text)
    except ValueError as error:
        raise HandlerError(f"decoding the {what} as JSON: {error}") from error
    if not isinstance(value, dict):
        raise HandlerError(f"decoding the {what}: expected a JSON object, got {type(value).__name__}")
    return view(value)


_scan_value = json.JSONDecoder().scan_once
_skip_space = re.compile(r"[ \t\n\r]*").match
_METADATA_NAME = '"metadata":'


def _metadata_of(what: str, text: str) -> dict:
    """The ``metadata`` member of the JSON object ``text``, decoded alone.

    The members before it are decoded to be stepped over (an API server
    writes only ``apiVersion`` and ``kind`` there), those after it not at
    all, so reading the metadata of a 4 KB Pod costs a quarter of parsing
    it. Each name and value is one call of the json module's C decoder;
    whitespace, which API servers do not write, is skipped where it is
    found. Nothing after the metadata is checked: a document broken there
    reads until the whole object is parsed. ``{}`` when there is no
    metadata."""
    # The usual case in a few searches: the first `"metadata":` is the
    # object's own when all before it is flat (``{"apiVersion":"v1",
    # "kind":"Pod",``): an object opened there, no escapes (every quote
    # opens or closes a string), an even number of quotes (so the name is
    # outside strings), no brackets or braces but the first, and a comma or
    # that brace just before the name. Anything else is read member by
    # member.
    found = text.find(_METADATA_NAME)
    if (found > 0 and text[0] == "{" and text[found - 1] in ",{" and text.find("\\", 0, found) < 0
            and text.count('"', 0, found) % 2 == 0 and text.find("{", 1, found) < 0
            and text.find("}", 0, found) < 0 and text.find("[", 0, found) < 0):
        at = found + len(_METADATA_NAME)
        if text.startswith("{", at):
            try:
                return _scan_value(text, at)[0]
            except (StopIteration, ValueError):
                pass  # the member by member reading says what is wrong
    return _members_until_metadata(what, text)


def _members_until_metadata(what: str, text: str) -> dict:
    """:func:`_metadata_of` member by member (the slow way, for objects not
    written as API servers write them)."""

    def past(at: int, expected: str, problem: str) -> int:
        """The index after ``expected`` at ``at`` (whitespace skipped
        first), or a ValueError naming ``problem``."""
        at = _skip_space(text, at).end()
        if text[at] != expected:
            raise ValueError(f"expected {problem} at char {at}")
        return at + 1

    try:
        at = _skip_space(text, past(0, "{", "a JSON object")).end()
        if text[at] == "}":
            return {}
        while True:
            key, at = _scan_value(text, past(at, '"', "a member name") - 1)
            value, at = _scan_value(text, _skip_space(text, past(at, ":", "':'")).end())
            if key == "metadata":
                if not isinstance(value, dict):
                    raise ValueError(f"metadata is a {type(value).__name__}, not an object")
                return value
            at = _skip_space(text, at).end()
            if text[at] == "}":
                return {}
            at = past(at, ",", "',' or '}'")
    except StopIteration as error:
        raise HandlerError(f"decoding the {what}'s metadata: expected a value at char {error.value}") from None
    except (ValueError, IndexError) as error:
        problem = error if isinstance(error, ValueError) else "the text ends inside the object"
        raise HandlerError(f"decoding the {what}'s metadata: {problem}") from error


#: A notification's head in a delivery frame (``wit/0.7.0/herald.wit``):
#: what, flags, two zero bytes, then the lengths of its seven fields (group,
#: version, kind, resource, key, resourceVersion, object), which follow it.
HEAD = struct.Struct("<BBH7I")


def _context_of(frame: bytes, at: int) -> Context:
    """The context of the frame's notification whose head starts at byte
    ``at``."""
    head = HEAD.unpack_from(frame, at)
    start = at + HEAD.size
    texts = []
    for length in head[3:9]:
        texts.append(frame[start:start + length].decode())
        start += length
    group, version, kind, resource, key, resource_version = texts
    flags = head[1]
    return Context(GroupVersionKind(group, version, kind), resource, key, resource_version,
                   is_initial_list=bool(flags & 1), is_resync=bool(flags & 2),
                   final_state_unknown=bool(flags & 4))


def _object_of(frame: bytes, at: int) -> str:
    """The object's JSON text of that notification: its seventh field."""
    head = HEAD.unpack_from(frame, at)
    start = at + HEAD.size + sum(head[3:9])
    return frame[start:start + head[9]].decode()


class _ContextAccessors:
    """The :class:`Context` fields, forwarded. An event read from a frame
    makes its context on first use: a handler that reads none of it pays
    for none of it."""

    _context: Optional[Context] = None
    #: ``(frame, at)`` for a notification read from a frame: its head
    #: starts at byte ``at``.
    _frame: Optional[tuple] = None

    @property
    def context(self) -> Context:
        """What the host said about this notification."""
        if self._context is None:
            self._context = _context_of(*self._frame)
        return self._context

    @property
    def kind(self) -> GroupVersionKind:
        """The subscription's kind."""
        return self.context.kind

    @property
    def resource(self) -> str:
        """The plural resource name, e.g. ``pods``."""
        return self.context.resource

    @property
    def key(self) -> str:
        """``namespace/name``, or ``name`` when cluster-scoped."""
        return self.context.key

    @property
    def namespace(self) -> Optional[str]:
        """The namespace part of the key; ``None`` when cluster-scoped."""
        return self.context.namespace

    @property
    def name(self) -> str:
        """The name part of the key."""
        return self.context.name

    @property
    def resource_version(self) -> str:
        """The ``metadata.resourceVersion`` of the (new) object."""
        return self.context.resource_version

    @property
    def is_initial_list(self) -> bool:
        """A synthetic add replaying the cache to a plugin that joined late."""
        return self.context.is_initial_list

    @property
    def is_resync(self) -> bool:
        """A periodic resync update (old and new equal)."""
        return self.context.is_resync

    @property
    def final_state_unknown(self) -> bool:
        """A delete inferred from a relist; the object is its last known state."""
        return self.context.final_state_unknown


class Event(_ContextAccessors):
    """An add or a delete: the context plus one object.

    ``event.object`` is the object as a :class:`~herald_sdk.kinds.KubeObject`
    (a ``dict``; a typed view such as :class:`~herald_sdk.kinds.Pod` when the
    kind has one), parsed on first use; ``event.object_as(Pod)`` picks the view.
    """

    def __init__(self, context: Context, json_text: str) -> None:
        self._context = context
        self._json: Optional[str] = json_text
        self._object: Optional[KubeObject] = None

    # What an event read from a frame starts with (``deliver`` sets only
    # ``_frame``: a call per notification is the one thing it must not
    # spend).
    _json: Optional[str] = None
    _object: Optional[KubeObject] = None

    @property
    def json(self) -> str:
        """The object's JSON text, as the host sent it."""
        if self._json is None:
            self._json = _object_of(*self._frame)
        return self._json

    @property
    def object(self) -> KubeObject:
        """The object, parsed (once). Raises :class:`~herald_sdk.HandlerError` if it is not a JSON object."""
        if self._object is None:
            self._object = _decode("object", self.json, view_for(self.context.kind))
        return self._object

    def object_as(self, view: Type[View]) -> View:
        """The object as the typed view ``view``, e.g. ``event.object_as(Pod)``."""
        return view(self.object)

    @property
    def metadata(self) -> dict:
        """The object's ``metadata`` (labels, annotations, owner references,
        ...), decoded without the rest of the object: the cheap read for a
        handler that looks only at metadata (``event.object["metadata"]``
        once the object is parsed anyway)."""
        if self._object is not None:
            return self._object.get("metadata") or {}
        return _metadata_of("object", self.json)

    def __repr__(self) -> str:
        return f"Event({self.context!r})"


class Update(_ContextAccessors):
    """An update: the context plus the old and the new object (equal on a resync)."""

    def __init__(self, context: Context, old_json: str, new_json: str) -> None:
        self._context = context
        self._old_json: Optional[str] = old_json
        self._new_json: Optional[str] = new_json
        self._old_range: Optional[tuple] = None
        self._old: Optional[KubeObject] = None
        self._new: Optional[KubeObject] = None

    # What an update read from a frame starts with (``deliver`` sets only
    # ``_frame`` and ``_old_range``, where the old state is: ``None`` when
    # the plugin's ``OLD_STATE`` declined it).
    _old_json: Optional[str] = None
    _new_json: Optional[str] = None
    _old_range: Optional[tuple] = None
    _old: Optional[KubeObject] = None
    _new: Optional[KubeObject] = None

    @property
    def old_json(self) -> str:
        """The old object's JSON text; ``""`` when the plugin declined it
        (``OLD_STATE = False``)."""
        if self._old_json is None:
            if self._old_range is None:
                return ""
            start, end = self._old_range
            self._old_json = self._frame[0][start:end].decode()
        return self._old_json

    @property
    def new_json(self) -> str:
        """The new object's JSON text."""
        if self._new_json is None:
            self._new_json = _object_of(*self._frame)
        return self._new_json

    @property
    def old(self) -> KubeObject:
        """The object before the change, parsed (once); a
        :class:`~herald_sdk.HandlerError` when the plugin declined it."""
        if self._old is None:
            self._old = _decode("old object", self._delivered_old_json(), view_for(self.context.kind))
        return self._old

    @property
    def new(self) -> KubeObject:
        """The object after the change, parsed (once)."""
        if self._new is None:
            self._new = _decode("new object", self.new_json, view_for(self.context.kind))
        return self._new

    @property
    def new_metadata(self) -> dict:
        """The new object's ``metadata``, decoded without the rest of it
        (as :attr:`Event.metadata`)."""
        if self._new is not None:
            return self._new.get("metadata") or {}
        return _metadata_of("new object", self.new_json)

    @property
    def old_metadata(self) -> dict:
        """The old object's ``metadata``, decoded without the rest of it; a
        :class:`~herald_sdk.HandlerError` when the plugin declined the old
        state."""
        if self._old is not None:
            return self._old.get("metadata") or {}
        return _metadata_of("old object", self._delivered_old_json())

    def _delivered_old_json(self) -> str:
        """:attr:`old_json`, or a :class:`~herald_sdk.HandlerError` when the
        plugin declined the old state (where ``old_json`` is ``""``)."""
        if self._old_json is None and self._old_range is None:
            raise HandlerError("the old state was not delivered: the plugin's OLD_STATE is False")
        return self.old_json

    def __repr__(self) -> str:
        return f"Update({self.context!r})"
