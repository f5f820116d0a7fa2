"""``urllib.request`` over the host's ``wasi:http``: an opener whose
``http`` and ``https`` handler sends each request through
:mod:`herald_sdk.http` (one hop at a time: urllib follows redirects itself).
Not a public API: :func:`herald_sdk.http.install_urllib` installs it.

Why it is needed: urllib's own handlers open sockets (``http.client``),
which a component does not have. Before getting there they fail with
``LookupError: unknown encoding: idna``: ``socket.getaddrinfo`` encodes the
host name with the ``idna`` codec, which is looked up by name at run time,
and componentize-py puts into the component only the modules the app
imports.
"""

from __future__ import annotations

import io
import urllib.error
import urllib.request
import urllib.response
from email.message import Message
from http.client import responses as REASONS

from herald_sdk import http as herald_http


#: urllib's socket-based handlers (no ``HTTPSHandler`` without ``ssl``, as in a component).
_REPLACED = tuple(getattr(urllib.request, name) for name in ("HTTPHandler", "HTTPSHandler")
                  if hasattr(urllib.request, name))


class HeraldHandler(*_REPLACED):
    """Opens ``http:`` and ``https:`` URLs through the host. A subclass of
    urllib's ``HTTPHandler`` (and ``HTTPSHandler`` where there is one), so
    ``build_opener`` leaves the socket-based ones out."""

    def http_open(self, req: urllib.request.Request) -> urllib.response.addinfourl:
        timeout = req.timeout if isinstance(req.timeout, (int, float)) else None
        # The host sets Host from the URL and refuses it as a header.
        headers = [(name, value) for name, value in req.header_items() if name.lower() != "host"]
        try:
            response = herald_http.request(req.get_method(), req.full_url, headers=headers,
                                    body=req.data, timeout=timeout, max_redirects=0)
        except herald_http.HttpError as error:
            raise urllib.error.URLError(error) from None
        headers = Message()
        for name, value in response.headers:
            headers[name] = value
        answer = urllib.response.addinfourl(io.BytesIO(response.body), headers, req.full_url, response.status)
        answer.msg = REASONS.get(response.status, "")
        return answer

    https_open = http_open

    def http_request(self, req: urllib.request.Request) -> urllib.request.Request:
        # urllib adds content-type and content-length for a body, as for sockets.
        return self.do_request_(req)

    https_request = http_request


def install() -> None:
    """Makes ``urllib.request.urlopen`` use :class:`HeraldHandler`."""
    urllib.request.install_opener(urllib.request.build_opener(HeraldHandler))
