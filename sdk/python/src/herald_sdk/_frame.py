"""World 0.7.0's delivery frames, read: one or more notifications in one
``bytes`` (the layout ``wit/0.7.0/herald.wit`` documents on ``delivery``).
:func:`deliver` hands them to the handler. Not a public API."""

from __future__ import annotations

import struct
from typing import Any, Callable, Optional, Protocol, Tuple

from herald_sdk.errors import failure_message
from herald_sdk.event import HEAD, Event, Update

#: What happened, and the flags byte.
ADDED, UPDATED, DELETED = 0, 1, 2
INITIAL_LIST, RESYNC, FINAL_STATE_UNKNOWN, OLD_STATE = 1, 2, 4, 8
_KNOWN_FLAGS = INITIAL_LIST | RESYNC | FINAL_STATE_UNKNOWN | OLD_STATE

_HEAD_SIZE = HEAD.size
_unpack_head = HEAD.unpack_from
#: The frame's count and its first notification's head, read in one go.
_FIRST = struct.Struct("<I" + HEAD.format.lstrip("<"))
_FIRST_SIZE = _FIRST.size
_unpack_first = _FIRST.unpack_from
_LENGTH = struct.Struct("<I")
_unpack_length = _LENGTH.unpack_from
_UNKNOWN_FLAGS = ~_KNOWN_FLAGS
_new = object.__new__
_MALFORMED = "malformed delivery frame: "


class Handlers(Protocol):
    """Where :func:`deliver` finds the handler's methods, and what it
    does with a failure."""

    #: ``(on_add, on_update, on_delete)`` of the handler, bound; ``None``
    #: until :meth:`bind` has made them.
    methods: Optional[Tuple[Callable[[Any], Any], Callable[[Any], Any], Callable[[Any], Any]]]

    def bind(self) -> Tuple[Callable[[Any], Any], Callable[[Any], Any], Callable[[Any], Any]]:
        """Creates the handler (which may raise) and returns its methods."""

    def fail(self, index: int, message: str) -> Any:
        """What :func:`deliver` returns (or raises) when notification
        ``index`` failed with ``message``."""


def deliver(handlers: Handlers, frame: bytes) -> Any:
    """Hands the frame's notifications to the handler in order, each as an
    :class:`~herald_sdk.Event` or :class:`~herald_sdk.Update` that reads
    its context and objects from the frame only when the handler asks.
    Returns ``None``, or what ``handlers.fail(index, message)`` returns for the
    notification that failed (those after it are not handled): a handler
    that raised, or the frame not following the layout there. Bytes after
    the last notification fail at the index past it, once every
    notification has been handled.

    This is most of what a Python plugin that does little spends on a
    call, so it is one function: the count and the first head unpacked
    together, the lengths added in place, no tuple of ranges, no generator,
    the handler's methods bound once."""
    size = len(frame)
    if size < _FIRST_SIZE:
        return _deliver_nothing(handlers, frame)
    count, what, flags, zero, group, version, kind, resource, key, resource_version, obj = \
        _unpack_first(frame, 0)
    if not count:
        return _deliver_nothing(handlers, frame)
    try:
        methods = handlers.methods or handlers.bind()
    except Exception as error:  # the handler's creation failed: the first notification's failure
        return handlers.fail(0, failure_message(error))
    at = 4
    index = 0
    while True:
        if flags & _UNKNOWN_FLAGS or zero or what > DELETED:
            return handlers.fail(index, f"{_MALFORMED}unknown notification type {what} or flags {flags} "
                                        "(a newer host?)")
        head_at = at
        at += _HEAD_SIZE + group + version + kind + resource + key + resource_version + obj
        if what == UPDATED:
            argument = _new(Update)
            argument._frame = (frame, head_at)
            if flags & OLD_STATE:
                if at + 4 > size:
                    return handlers.fail(index, f"{_MALFORMED}it ends at byte {size} inside a length")
                (length,) = _unpack_length(frame, at)
                argument._old_range = (at + 4, at + 4 + length)
                at += 4 + length
        else:
            argument = _new(Event)
            argument._frame = (frame, head_at)
        if at > size:
            return handlers.fail(index, f"{_MALFORMED}a notification runs past the frame's end "
                                        f"({size} bytes)")
        try:
            methods[what](argument)
        except Exception as error:  # every Exception is a handler failure, by contract
            return handlers.fail(index, failure_message(error))
        index += 1
        if index == count:
            break
        if at + _HEAD_SIZE > size:
            return handlers.fail(index, f"{_MALFORMED}it ends at byte {size} inside a notification's head")
        what, flags, zero, group, version, kind, resource, key, resource_version, obj = _unpack_head(frame, at)
    if at != size:
        return handlers.fail(count, f"{_MALFORMED}{size - at} bytes follow its last notification")
    return None


def _deliver_nothing(handlers: Handlers, frame: bytes) -> Any:
    """:func:`deliver` for a frame too short for a count and a head: only
    four bytes saying zero are a frame."""
    size = len(frame)
    if size < 4:
        return handlers.fail(0, f"{_MALFORMED}{size} bytes, too short for its count")
    if _unpack_length(frame, 0)[0]:
        return handlers.fail(0, f"{_MALFORMED}it ends at byte {size} inside a notification's head")
    if size > 4:
        return handlers.fail(0, f"{_MALFORMED}{size - 4} bytes follow its last notification")
    return None


def write(notifications_: list) -> bytes:
    """A frame of ``(what, context, object_json, old_json_or_None)``
    tuples, as the host writes it: for tests."""
    out = bytearray(_LENGTH.pack(len(notifications_)))
    for what, context, obj, old in notifications_:
        flags = ((INITIAL_LIST if context.is_initial_list else 0) | (RESYNC if context.is_resync else 0)
                 | (FINAL_STATE_UNKNOWN if context.final_state_unknown else 0) | (OLD_STATE if old is not None else 0))
        fields = [context.kind.group, context.kind.version, context.kind.kind, context.resource, context.key,
                  context.resource_version, obj]
        encoded = [field.encode() for field in fields]
        out += HEAD.pack(what, flags, 0, *(len(field) for field in encoded))
        for field in encoded:
            out += field
        if old is not None:
            out += _LENGTH.pack(len(old.encode())) + old.encode()
    return bytes(out)
