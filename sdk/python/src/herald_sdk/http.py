"""Outbound HTTP: a small blocking client over the standard
``wasi:http/outgoing-handler``, for webhooks and the like.

.. code-block:: python

    from herald_sdk import http

    response = http.post_json("https://hooks.example.com/alerts", {"text": "web-0 is crash looping"})
    response.raise_for_status()                       # HttpError(kind="status") unless 2xx
    status = http.get_json("https://ops.example.com/api/status")
    http.request("PUT", "https://ops.example.com/api/notes/web", body="restarted",
                 headers={"authorization": "Bearer s3cr3t"}, timeout=2)

The standard library's ``urllib.request.urlopen`` works too: a plugin that
imports ``urllib.request`` gets an opener sending through this client (the
build installs it, and so does :func:`herald_sdk.testing.reset`), with
urllib's own redirects and ``HTTPError`` for statuses of 400 and more.
``http.client`` and sockets do not: the sandbox has no sockets.

**Grants.** A plugin that makes requests declares the ``http`` capability
(``Manifest.capability(HTTP)``), and the operator grants it the origins it
may reach (``grants.http.allowedOrigins``). Every request is checked by the
host against those origins; any other fails with :class:`HttpError` of kind
``denied`` and never leaves the host.

**Redirects** are followed, at most 5 by default (``max_redirects``): after a
301, 302 or 303 the next request is a ``GET`` without a body (a ``HEAD``
stays a ``HEAD``); after a 307 or 308 it repeats the method and the body.
Each hop is a new request the host checks like the first; on a hop to
another origin the ``authorization``, ``cookie`` and ``proxy-authorization``
headers are dropped.

**Limits.** Calls block until the whole body is read, at most 4 MiB by
default (``max_response_bytes``) and what the host allows. They are bounded
by the handler call's deadline (the host gives each request at most 80 % of
what is left) and by the timeout hints, in seconds (``timeout`` sets the
connect, first-byte and between-bytes hints at once).

In tests, requests reach :mod:`herald_sdk.testing.http`, which records them
and answers from scripted responses (404 when none matches).
"""

from __future__ import annotations

import json as _json
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union
from urllib.parse import urljoin, urlsplit

from herald_sdk import _host

#: The most redirects a request follows unless told otherwise.
DEFAULT_MAX_REDIRECTS = 5
#: The largest response body read unless told otherwise: 4 MiB.
DEFAULT_MAX_RESPONSE_BYTES = 4 << 20

#: The kinds of :class:`HttpError`, as the Rust SDK's ``HttpErrorKind`` in kebab-case.
KINDS = ("denied", "timeout", "connection", "too-large", "status", "invalid-url", "invalid-request",
         "too-many-redirects", "decode", "protocol")

_DENIED = ("denied by the host (HTTP-request-denied): the origin is not granted to the plugin "
           "(grants.http.allowedOrigins), its address is one plugins may not reach, or the plugin "
           "lacks the http capability")
_BODY_HEADERS = ("content-type", "content-length", "content-encoding")
_SECRET_HEADERS = ("authorization", "cookie", "proxy-authorization")

Headers = Union[Mapping[str, str], Iterable[Tuple[str, str]], None]


class HttpError(Exception):
    """A failed request: which one (``method``, ``url``) and how (``kind``,
    one of :data:`KINDS`, and ``detail``). Raised from a handler, it fails the
    call and the host retries the notification with backoff.
    ``str(error)`` is ``POST https://hooks.example.com/x: timed out (…)``."""

    def __init__(self, kind: str, detail: str = "", method: Optional[str] = None, url: str = "",
                 status: Optional[int] = None) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown HTTP error kind {kind!r}: one of {', '.join(KINDS)}")
        #: How it failed.
        self.kind = kind
        #: What the host or the SDK said.
        self.detail = detail
        #: The method of the request that failed (``None`` for a response built by hand).
        self.method = method
        #: The URL of the request that failed: a redirect's when a later hop failed.
        self.url = url
        #: The unexpected status, for kind ``status``.
        self.status = status
        super().__init__(str(self))

    def __str__(self) -> str:
        what = {
            "denied": _DENIED,
            "timeout": f"timed out ({self.detail})",
            "connection": f"connection failed ({self.detail})",
            "too-large": f"too large ({self.detail})",
            "status": f"unexpected status {self.status}" + (f": {self.detail}" if self.detail else ""),
            "invalid-url": f"invalid URL ({self.detail})",
            "invalid-request": f"invalid request ({self.detail})",
            "too-many-redirects": f"more than {self.detail} redirects",
            "decode": f"the body would not decode ({self.detail})",
            "protocol": f"failed ({self.detail})",
        }[self.kind]
        where = f"{self.method} {self.url}" if self.method else self.url
        return f"{where}: {what}" if where else what

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash((self.kind, self.detail, self.url))

    @property
    def denied(self) -> bool:
        """Whether the host refused the request (the origin is not granted)."""
        return self.kind == "denied"

    @property
    def retryable(self) -> bool:
        """Whether trying again later may succeed: timeouts, connection
        failures, protocol errors and the statuses 408, 429 and 5xx."""
        if self.kind == "status":
            return self.status in (408, 429) or 500 <= (self.status or 0) < 600
        return self.kind in ("timeout", "connection", "protocol")


class Response:
    """A response, read to the end. In tests, build one to script
    :mod:`herald_sdk.testing.http`: ``Response(200, json={"ok": True})``."""

    def __init__(self, status: int, body: Union[bytes, str] = b"", headers: Headers = None,
                 json: Any = None) -> None:
        #: The status code.
        self.status = int(status)
        #: The headers, names in lowercase, in order.
        self.headers: List[Tuple[str, str]] = [(name.lower(), value) for name, value in _pairs(headers)]
        if json is not None:
            body = _json.dumps(json)
            if self.header("content-type") is None:
                self.headers.append(("content-type", "application/json"))
        #: The body.
        self.body: bytes = body.encode() if isinstance(body, str) else bytes(body)
        #: The URL that answered (the last hop's); empty for a response built by hand.
        self.url = ""
        #: The method of the request that got it.
        self.method: Optional[str] = None

    @property
    def ok(self) -> bool:
        """Whether the status is 2xx (the Rust SDK's ``is_success``)."""
        return 200 <= self.status < 300

    def header(self, name: str) -> Optional[str]:
        """The first value of header ``name`` (any case), or ``None``."""
        name = name.lower()
        return next((value for key, value in self.headers if key == name), None)

    @property
    def text(self) -> str:
        """The body as UTF-8 text (invalid bytes replaced)."""
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body parsed as JSON; :class:`HttpError` of kind ``decode`` if it is not."""
        try:
            return _json.loads(self.body)
        except ValueError as error:
            raise HttpError("decode", str(error), self.method, self.url) from None

    def raise_for_status(self) -> "Response":
        """Itself if the status is 2xx; otherwise :class:`HttpError` of kind
        ``status`` with the first 200 characters of the body (the Rust SDK's
        ``error_for_status``)."""
        if self.ok:
            return self
        raise HttpError("status", self.text[:200], self.method, self.url, self.status)

    def __repr__(self) -> str:
        return f"<Response {self.status} {self.url or '(not sent)'} {len(self.body)} bytes>"


def _pairs(headers: Headers) -> List[Tuple[str, str]]:
    if headers is None:
        return []
    items = headers.items() if isinstance(headers, Mapping) else headers
    return [(str(name), str(value)) for name, value in items]


class Hop:
    """One request as it is handed to the host (a redirect makes another).
    Not a public API: the host calls and the test host take it."""

    __slots__ = ("method", "url", "headers", "body", "timeouts_ms", "max_response_bytes")

    def __init__(self, method: str, url: str, headers: List[Tuple[str, str]], body: bytes,
                 timeouts_ms: Tuple[Optional[int], Optional[int], Optional[int]], max_response_bytes: int) -> None:
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        #: Connect, first-byte and between-bytes hints, in milliseconds.
        self.timeouts_ms = timeouts_ms
        self.max_response_bytes = max_response_bytes

    def parts(self) -> Tuple[str, str, str]:
        """``(scheme, authority, path_with_query)``."""
        parsed = urlsplit(self.url)
        path = parsed.path or "/"
        return parsed.scheme, parsed.netloc, path + (f"?{parsed.query}" if parsed.query else "")


def origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``, lowercase, the port only when it
    is not the scheme's default: what ``grants.http.allowedOrigins`` lists."""
    parsed = urlsplit(url.strip())
    scheme, host = parsed.scheme.lower(), (parsed.hostname or "").lower()
    try:
        port = parsed.port
    except ValueError:
        port = None
    default = {"http": 80, "https": 443}.get(scheme)
    return f"{scheme}://{host}" + (f":{port}" if port is not None and port != default else "")


def _check_url(url: str) -> Optional[str]:
    """Why ``url`` cannot be requested, or ``None``."""
    try:
        parsed = urlsplit(url)
        parsed.port
    except ValueError as error:
        return str(error)
    if parsed.scheme not in ("http", "https"):
        return f"{url!r} is not an absolute http or https URL"
    if not parsed.hostname:
        return f"{url!r} has no host"
    return None


def _ms(seconds: Optional[float]) -> Optional[int]:
    return None if seconds is None else max(0, int(seconds * 1000))


def request(method: str, url: str, *, headers: Headers = None, body: Union[bytes, str, None] = None,
            json: Any = None, timeout: Optional[float] = None, connect_timeout: Optional[float] = None,
            first_byte_timeout: Optional[float] = None, between_bytes_timeout: Optional[float] = None,
            max_redirects: int = DEFAULT_MAX_REDIRECTS,
            max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES) -> Response:
    """Sends ``method url`` and reads the whole response, following redirects.
    Any status is a response (see :meth:`Response.raise_for_status`);
    failures raise :class:`HttpError`.

    ``headers`` is a dict or pairs; ``body`` bytes or text; ``json`` a value
    sent as JSON with ``content-type: application/json``. Timeouts are hints
    in seconds, handed to the host, which may cap them; ``timeout`` sets all
    three."""
    method = method.upper()
    pairs = _pairs(headers)
    if json is not None:
        if body is not None:
            raise TypeError("request takes body or json, not both")
        try:
            body = _json.dumps(json)
        except (TypeError, ValueError) as error:
            raise HttpError("invalid-request", f"encoding the JSON body: {error}", method, url) from None
        if not any(name.lower() == "content-type" for name, _ in pairs):
            pairs.append(("content-type", "application/json"))
    data = body.encode() if isinstance(body, str) else bytes(body or b"")
    timeouts = tuple(_ms(hint if hint is not None else timeout)
                     for hint in (connect_timeout, first_byte_timeout, between_bytes_timeout))
    problem = _check_url(url)
    if problem is not None:
        raise HttpError("invalid-url", problem, method, url)
    redirects = 0
    while True:
        hop = Hop(method, url, pairs, data, timeouts, max_response_bytes)
        try:
            response = _host.http_send(hop)
        except HttpError as error:
            raise HttpError(error.kind, error.detail, method, url, error.status) from None
        response.url, response.method = url, method
        location = response.header("location")
        if response.status not in (301, 302, 303, 307, 308) or max_redirects == 0 or location is None:
            return response
        if redirects == max_redirects:
            raise HttpError("too-many-redirects", str(max_redirects), method, url)
        redirects += 1
        following = urljoin(url, location)
        problem = _check_url(following)
        if problem is not None:
            raise HttpError("invalid-url", f"redirected to {location!r}: {problem}", method, url)
        if response.status in (301, 302, 303) and method != "HEAD":
            method, data = "GET", b""
            pairs = [(name, value) for name, value in pairs if name.lower() not in _BODY_HEADERS]
        if origin(following) != origin(url):
            pairs = [(name, value) for name, value in pairs if name.lower() not in _SECRET_HEADERS]
        url = following


def get(url: str, **options: Any) -> Response:
    """``GET url`` (options as :func:`request`)."""
    return request("GET", url, **options)


def post(url: str, **options: Any) -> Response:
    """``POST url`` (options as :func:`request`: ``body=``, ``json=``, ...)."""
    return request("POST", url, **options)


def put(url: str, **options: Any) -> Response:
    """``PUT url`` (options as :func:`request`)."""
    return request("PUT", url, **options)


def patch(url: str, **options: Any) -> Response:
    """``PATCH url`` (options as :func:`request`)."""
    return request("PATCH", url, **options)


def delete(url: str, **options: Any) -> Response:
    """``DELETE url`` (options as :func:`request`)."""
    return request("DELETE", url, **options)


def get_json(url: str, **options: Any) -> Any:
    """``GET url`` with ``accept: application/json``, the 2xx answer's body
    parsed; any other status raises :class:`HttpError` of kind ``status``."""
    headers = dict(_pairs(options.pop("headers", None)))
    headers.setdefault("accept", "application/json")
    return request("GET", url, headers=headers, **options).raise_for_status().json()


def post_json(url: str, value: Any, **options: Any) -> Response:
    """``POST url`` with ``value`` as JSON; any status is a response."""
    return request("POST", url, json=value, **options)


def install_urllib() -> None:
    """Makes ``urllib.request.urlopen`` (and the default opener) send through
    this client. The build does it for a plugin that imports
    ``urllib.request``, and :func:`herald_sdk.testing.reset` for its tests."""
    from herald_sdk import _urllib

    _urllib.install()


__all__ = ["HttpError", "Response", "KINDS", "request", "get", "post", "put", "patch", "delete", "get_json",
           "post_json", "origin", "install_urllib", "DEFAULT_MAX_REDIRECTS", "DEFAULT_MAX_RESPONSE_BYTES"]
