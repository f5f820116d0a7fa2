"""The exceptions of the SDK: a handler failure and the cache's refusals."""

from __future__ import annotations


class HandlerError(Exception):
    """A handler failure whose message the host records as is.

    Raise it (or any other ``Exception``) from ``on_add``, ``on_update`` or
    ``on_delete``: the host records the failure and retries the notification
    with backoff a bounded number of times. The SDK sends this exception's
    message unchanged, and other exceptions as ``TypeName: message``.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        #: The message the host will record.
        self.message = message

    def context(self, doing: str) -> "HandlerError":
        """A copy whose message is prefixed with what was being done, as in
        ``decoding the plugin configuration: Expecting value``."""
        return HandlerError(f"{doing}: {self.message}")


class CacheError(Exception):
    """Why a cache look-up could not be answered (see :mod:`herald_sdk.cache`)."""


class NotSubscribed(CacheError):
    """The plugin did not subscribe to this kind, so it cannot see it."""

    def __init__(self, kind) -> None:
        super().__init__(f"not subscribed to {kind}")
        #: The :class:`~herald_sdk.GroupVersionKind` looked up.
        self.kind = kind


class InvalidSelector(CacheError):
    """The label selector did not parse; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"invalid label selector: {reason}")
        #: The parser's complaint.
        self.reason = reason


def failure_message(error: BaseException) -> str:
    """The text that crosses the ABI as ``err(string)`` for ``error``:
    a :class:`HandlerError`'s message as is, otherwise ``TypeName: message``
    (just ``TypeName`` when the message is empty)."""
    if isinstance(error, HandlerError):
        return error.message
    text = str(error)
    name = type(error).__name__
    return f"{name}: {text}" if text else name
