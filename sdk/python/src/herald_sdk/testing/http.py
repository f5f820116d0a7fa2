"""The stand-in host's side of outbound HTTP: every request (each hop of a
redirect) is recorded, and answered by the scripts below, the last added
that matches winning, one-shot ones first; unscripted, a request gets a 404
(or a denial, after :func:`deny_unscripted`).

.. code-block:: python

    from herald_sdk import testing
    from herald_sdk.http import Response

    testing.http.respond("https://hooks.example.com/", Response(200))   # a prefix, or a glob with *
    testing.http.respond_once("https://hooks.example.com/", Response(503, "down"))
    testing.http.fail_once("https://hooks.example.com/", "timeout")
    testing.http.grant("https://hooks.example.com")                      # other origins are then denied
    plugin.on_update(testing.updated(old, new))
    [post] = testing.http.take_requests()
    assert post.json() == {"text": "..."}
"""

from __future__ import annotations

from typing import List

from herald_sdk import _fake_host
from herald_sdk._fake_host import HttpScript, RecordedRequest
from herald_sdk.http import KINDS, HttpError, Response, origin

__all__ = ["RecordedRequest", "respond", "respond_once", "fail", "fail_once", "grant", "deny_unscripted",
           "requests", "take_requests"]


def _script(pattern: str, answer, times) -> None:
    _fake_host.STATE.http_scripts.append(HttpScript(pattern, answer, times))


def respond(pattern: str, response: Response) -> None:
    """Answers every later request whose URL matches ``pattern`` (a prefix,
    or a glob where ``*`` matches any run of characters) with ``response``."""
    if not isinstance(response, Response):
        raise TypeError(f"respond takes a herald_sdk.http.Response, got {response!r}")
    _script(pattern, response, None)


def respond_once(pattern: str, response: Response) -> None:
    """Answers the next request whose URL matches ``pattern`` with ``response``, once."""
    if not isinstance(response, Response):
        raise TypeError(f"respond_once takes a herald_sdk.http.Response, got {response!r}")
    _script(pattern, response, 1)


def _error(kind: str, detail: str) -> HttpError:
    if kind not in KINDS:
        raise ValueError(f"unknown HTTP error kind {kind!r}: one of {', '.join(KINDS)}")
    return HttpError(kind, detail)


def fail(pattern: str, kind: str, detail: str = "scripted") -> None:
    """Fails every later request whose URL matches ``pattern`` as the host
    would: ``kind`` is ``"timeout"``, ``"connection"``, ``"denied"``, ...
    (:data:`herald_sdk.http.KINDS`)."""
    _script(pattern, _error(kind, detail), None)


def fail_once(pattern: str, kind: str, detail: str = "scripted") -> None:
    """Fails the next request whose URL matches ``pattern``, once."""
    _script(pattern, _error(kind, detail), 1)


def grant(origin_url: str) -> None:
    """Grants the plugin an origin (``scheme://host[:port]``), as the
    operator's ``grants.http`` does. Once any origin is granted, a request
    to one that is not fails with kind ``denied`` whatever the scripts say;
    a redirect too."""
    _fake_host.STATE.http_granted.append(origin(origin_url))


def deny_unscripted() -> None:
    """Makes an unscripted request fail with kind ``denied`` instead of answering 404."""
    _fake_host.STATE.http_deny_unscripted = True


def requests() -> List[RecordedRequest]:
    """Every request (hop) since the last :func:`take_requests`, in order, kept."""
    return list(_fake_host.STATE.http_requests)


def take_requests() -> List[RecordedRequest]:
    """Every request since the last take, removed."""
    taken, _fake_host.STATE.http_requests = _fake_host.STATE.http_requests, []
    return taken
