"""The exceptions of the SDK: a handler failure, the cache's refusals and
the Kubernetes API's (:class:`KubeError` and its subclasses, one per case of
the WIT ``kube-error`` variant)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional


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


class UnknownIndex(CacheError):
    """The manifest declares no index of this name (see :class:`herald_sdk.cache.Index`)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"the manifest declares no index named {name!r}")
        #: The index name looked up.
        self.name = name


@dataclass(frozen=True)
class Cause:
    """One reason the API server gave for refusing an object as invalid."""

    #: Machine-readable reason, e.g. ``FieldValueRequired``.
    reason: str
    #: Human-readable message.
    message: str
    #: The field at fault, e.g. ``spec.containers[0].image``.
    field: str


class KubeError(Exception):
    """Why a :mod:`herald_sdk.kube` call (or an event publish) failed. Catch
    the subclass you can act on: re-read and retry on :class:`Conflict`,
    create on :class:`NotFound`, back off on :class:`TooManyRequests`.
    Uncaught, it fails the handler call like any exception, and the host
    retries the notification with backoff.

    ``retryable`` says whether the same call may succeed later unchanged
    (throttling, timeouts, an unavailable server); a :class:`Conflict` needs
    a fresh read first, so it is not."""

    #: The WIT case, e.g. ``"not-found"``.
    case = ""
    #: Whether retrying the same call later may succeed.
    retryable = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        #: The host's or the API server's message.
        self.message = message

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash((type(self), self.message))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in vars(self).items())
        return f"{type(self).__name__}({fields})"


class NotGranted(KubeError):
    """The call is outside the plugin's declared write rules or the
    operator's grant (or, for an event, the ``events`` capability is
    missing); no request was sent. The message names what is missing."""

    case = "not-granted"


class NotFound(KubeError):
    """404: the object (or its namespace or kind) does not exist."""

    case = "not-found"


class AlreadyExists(KubeError):
    """409 AlreadyExists: a create of an object that exists."""

    case = "already-exists"


class Conflict(KubeError):
    """409 Conflict: a stale resourceVersion, a failed precondition, or a
    server-side apply conflict with another field manager. Read again and
    retry, or apply with ``force=True``."""

    case = "conflict"


class Invalid(KubeError):
    """422 Invalid: the API server refused the object; ``causes`` say which
    fields and why."""

    case = "invalid"

    def __init__(self, message: str, causes: Optional[List[Cause]] = None) -> None:
        super().__init__(message)
        #: The server's :class:`Cause` list.
        self.causes: List[Cause] = list(causes or [])


class Forbidden(KubeError):
    """403: the host's service account may not do this (its RBAC is narrower
    than the plugin's grant)."""

    case = "forbidden"


class TooManyRequests(KubeError):
    """429 from the API server, or the plugin's own rate limit could not admit
    the call before its deadline."""

    case = "too-many-requests"
    retryable = True

    def __init__(self, message: str, retry_after_ms: Optional[int] = None) -> None:
        super().__init__(message)
        #: How long to wait before retrying, in milliseconds, when known.
        self.retry_after_ms = retry_after_ms

    @property
    def retry_after(self) -> Optional[float]:
        """How long to wait before retrying, in seconds, when known."""
        return None if self.retry_after_ms is None else self.retry_after_ms / 1000


class Timeout(KubeError):
    """The call did not finish within the handler call's deadline, or the
    server answered 504."""

    case = "timeout"
    retryable = True


class Unavailable(KubeError):
    """The API server could not be reached, or answered 5xx."""

    case = "unavailable"
    retryable = True


class Failed(KubeError):
    """Any other refusal (400, 405, 415, …), with the server's status."""

    case = "failed"

    def __init__(self, message: str, code: int = 0, reason: str = "") -> None:
        super().__init__(message)
        #: The HTTP status code.
        self.code = code
        #: The Status ``reason`` (e.g. ``BadRequest``), possibly empty.
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
