"""World 0.7.0's delivery frames, read: one or more notifications in one
``bytes`` (the layout ``wit/0.7.0/herald.wit`` documents on ``delivery``).
Each notification becomes an :class:`~herald_sdk.Event` or
:class:`~herald_sdk.Update` that decodes its context and objects from the
frame only when the handler reads them. Not a public API."""

from __future__ import annotations

import struct
from typing import Iterator, Tuple, Union

from herald_sdk.event import Event, Update

#: What happened, and the flags byte.
ADDED, UPDATED, DELETED = 0, 1, 2
INITIAL_LIST, RESYNC, FINAL_STATE_UNKNOWN, OLD_STATE = 1, 2, 4, 8
_KNOWN_FLAGS = INITIAL_LIST | RESYNC | FINAL_STATE_UNKNOWN | OLD_STATE

#: A notification's head: what, flags, two zero bytes, seven lengths.
_HEAD = struct.Struct("<BBH7I")
_HEAD_SIZE = _HEAD.size
_LENGTH = struct.Struct("<I")
_METHODS = {ADDED: "on_add", UPDATED: "on_update", DELETED: "on_delete"}
_new = object.__new__


class FrameError(Exception):
    """A frame that does not follow the layout; the message says where."""


def count_of(frame: bytes) -> int:
    """The frame's number of notifications, its first u32."""
    if len(frame) < 4:
        raise FrameError(f"malformed delivery frame: {len(frame)} bytes, too short for its count")
    return _LENGTH.unpack_from(frame, 0)[0]


def read(frame: bytes, at: int) -> Tuple[str, Union[Event, Update], int]:
    """The notification that starts at byte ``at``: the handler method it
    goes to, its argument, and where the next one starts; a
    :class:`FrameError` if the frame stops making sense there.

    This runs once per notification and is most of what a Python plugin
    that does little spends on a call, so it reads the head once and
    leaves every field where it is: the event finds its context and its
    object from the head when the handler asks for them."""
    size = len(frame)
    if at + _HEAD_SIZE > size:
        raise FrameError(f"malformed delivery frame: it ends at byte {size} inside a notification's head")
    head = _HEAD.unpack_from(frame, at)
    what, flags = head[0], head[1]
    if flags & ~_KNOWN_FLAGS or head[2] or what > DELETED:
        raise FrameError(f"malformed delivery frame: unknown notification type {what} or flags {flags} "
                         "(a newer host?)")
    start = at + _HEAD_SIZE
    at = start + sum(head[3:])
    if what == UPDATED:
        update = _new(Update)
        update._frame = (frame, start, head)
        if flags & OLD_STATE:
            if at + 4 > size:
                raise FrameError(f"malformed delivery frame: it ends at byte {size} inside a length")
            (length,) = _LENGTH.unpack_from(frame, at)
            update._old_range = (at + 4, at + 4 + length)
            at += 4 + length
        argument: Union[Event, Update] = update
    else:
        event = _new(Event)
        event._frame = (frame, start, head)
        argument = event
    if at > size:
        raise FrameError(f"malformed delivery frame: a notification runs past the frame's end ({size} bytes)")
    return _METHODS[what], argument, at


def notifications(frame: bytes) -> Iterator[Tuple[str, Union[Event, Update]]]:
    """The frame's notifications in order, each as the handler method it
    goes to and its argument; a :class:`FrameError` where the frame stops
    making sense (the notifications before it come first)."""
    at = 4
    for _ in range(count_of(frame)):
        method, argument, at = read(frame, at)
        yield method, argument
    if at != len(frame):
        raise FrameError(f"malformed delivery frame: {len(frame) - at} bytes follow its last notification")


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
        out += _HEAD.pack(what, flags, 0, *(len(field) for field in encoded))
        for field in encoded:
            out += field
        if old is not None:
            out += _LENGTH.pack(len(old.encode())) + old.encode()
    return bytes(out)
