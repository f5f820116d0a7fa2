"""Reads and writes through the Kubernetes API server, with the host's client
and the deadline of the handler call (the ``kube`` interface of the WIT).

.. code-block:: python

    from herald_sdk import kube
    from herald_sdk.kinds import Deployment

    deployments = kube.Api(Deployment, namespace="shop")      # or kube.Api("apps", "v1", "Deployment", namespace="shop")
    web = deployments.get("web")                               # from the API server, not the cache
    deployments.patch("web", {"spec": {"replicas": 3}})        # JSON merge patch
    deployments.apply("web-policy", {"spec": {...}}, force=True)
    try:
        deployments.delete("old", uid=web.uid, propagation="foreground")
    except kube.NotFound:
        pass

Every call must be covered by a :class:`~herald_sdk.WriteRule` in the
manifest (``get`` too: it is a request to the API server) and by the
operator's grant; otherwise it raises :class:`NotGranted` without a request
leaving the host. In the operator's dry-run mode writes are sent with
``dryRun=All``: they answer as if they had happened, and nothing persists.
Server-side apply uses the field manager ``herald.<plugin-name>``.

Objects are dicts (a typed view from :mod:`herald_sdk.kinds` when the kind
has one) and travel as JSON text. Failures raise a :class:`KubeError`
subclass, one per case of the WIT ``kube-error`` variant.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Union

from herald_sdk import _host
from herald_sdk.errors import (AlreadyExists, Cause, Conflict, Failed, Forbidden, Invalid, KubeError,
                               NotFound, NotGranted, Timeout, TooManyRequests, Unavailable)
from herald_sdk.kinds import GroupVersionKind, KubeObject, as_kind, view_for

#: The patch types :meth:`Api.patch` accepts: JSON merge patch (RFC 7386),
#: JSON patch (RFC 6902, a list of operations), Kubernetes' strategic merge
#: patch (built-in kinds only).
PATCH_TYPES = ("merge", "json", "strategic")
#: The propagation policies :meth:`Api.delete` accepts.
PROPAGATIONS = ("orphan", "background", "foreground")

JsonBody = Union[Mapping[str, Any], list, str]


@dataclass(frozen=True)
class Target:
    """The object (or subresource) a call is about."""

    #: Its kind.
    kind: GroupVersionKind
    #: Its namespace; ``None`` for cluster-scoped kinds.
    namespace: Optional[str]
    #: Its name.
    name: str
    #: ``None`` for the object itself, ``"status"`` for its status.
    subresource: Optional[str] = None


def _text(body: JsonBody, what: str) -> str:
    if isinstance(body, str):
        return body
    try:
        return json.dumps(body)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{what} is not JSON-serializable: {error}") from error


class Api:
    """One kind, in one namespace (or cluster-scoped), on the API server.

    ``Api(Deployment, namespace="shop")``, ``Api(GroupVersionKind(...))``
    or ``Api("apps", "v1", "Deployment", namespace="shop")``; leave
    ``namespace`` out for a cluster-scoped kind. Objects come back parsed,
    as the kind's typed view (``Deployment``) or :class:`~herald_sdk.KubeObject`.
    """

    def __init__(self, kind_or_group: Any, version: Optional[str] = None, kind: Optional[str] = None,
                 namespace: Optional[str] = None) -> None:
        if version is None and kind is None:
            gvk = as_kind(kind_or_group)
            view = view_for(kind_or_group)
        elif isinstance(kind_or_group, str) and isinstance(version, str) and isinstance(kind, str):
            gvk = GroupVersionKind(kind_or_group, version, kind)
            view = view_for(gvk)
        else:
            raise TypeError("Api takes a kind, or three strings: group, version, kind")
        if namespace is not None and (not isinstance(namespace, str) or not namespace):
            raise TypeError(f"namespace must be a non-empty string or None, got {namespace!r}")
        #: The kind.
        self.kind: GroupVersionKind = gvk
        #: The namespace; ``None`` for a cluster-scoped kind.
        self.namespace: Optional[str] = namespace
        self._view = view

    def __repr__(self) -> str:
        return f"Api({self.kind}, namespace={self.namespace!r})"

    def _target(self, name: str, subresource: Optional[str] = None) -> Target:
        if not isinstance(name, str) or not name:
            raise TypeError(f"name must be a non-empty string, got {name!r}")
        return Target(self.kind, self.namespace, name, subresource)

    def _parse(self, text: str) -> KubeObject:
        return self._view(json.loads(text))

    def _body(self, obj: JsonBody, name: Optional[str] = None) -> str:
        """``obj`` as JSON text; a dict gets ``apiVersion``, ``kind`` and
        ``metadata.name`` (and namespace) filled in when missing, as apply
        needs them."""
        if not isinstance(obj, Mapping):
            return _text(obj, "the object")
        filled: Dict[str, Any] = dict(obj)
        filled.setdefault("apiVersion", self.kind.api_version)
        filled.setdefault("kind", self.kind.kind)
        metadata = dict(filled.get("metadata") or {})
        if name is not None:
            metadata.setdefault("name", name)
        if self.namespace is not None:
            metadata.setdefault("namespace", self.namespace)
        filled["metadata"] = metadata
        return _text(filled, "the object")

    # Reads.

    def get(self, name: str) -> KubeObject:
        """The object ``name`` as the API server has it now (verb ``get``).
        Raises :class:`NotFound` if it does not exist."""
        return self._parse(_host.kube_get(self._target(name)))

    def get_status(self, name: str) -> KubeObject:
        """The object read through its ``status`` subresource (verb ``get``
        on ``status``)."""
        return self._parse(_host.kube_get(self._target(name, "status")))

    # Writes of the object.

    def create(self, obj: JsonBody) -> KubeObject:
        """Creates ``obj`` (verb ``create``); returns it as stored. Raises
        :class:`AlreadyExists` if it exists."""
        return self._parse(_host.kube_create(self.kind, self.namespace, self._body(obj)))

    def replace(self, name: str, obj: JsonBody) -> KubeObject:
        """Replaces the object with ``obj`` (verb ``update``); a
        ``metadata.resourceVersion`` in ``obj`` makes it conditional (a
        :class:`Conflict` if the object moved on)."""
        return self._parse(_host.kube_replace(self._target(name), self._body(obj, name)))

    def patch(self, name: str, patch: JsonBody, type: str = "merge") -> KubeObject:
        """Patches the object (verb ``patch``) with ``patch``: a dict for a
        ``"merge"`` (default) or ``"strategic"`` patch, a list of operations
        for a ``"json"`` patch, or the JSON text of either."""
        return self._parse(_host.kube_patch(self._target(name), _patch_type(type), _text(patch, "the patch")))

    def apply(self, name: str, obj: JsonBody, force: bool = False) -> KubeObject:
        """Server-side applies ``obj`` (verb ``apply``) as the field manager
        ``herald.<plugin-name>``: creates the object or updates the fields
        this plugin manages. ``force`` takes over fields another manager owns
        instead of raising :class:`Conflict`."""
        return self._parse(_host.kube_apply(self._target(name), self._body(obj, name), bool(force)))

    def delete(self, name: str, uid: Optional[str] = None, resource_version: Optional[str] = None,
               propagation: Optional[str] = None) -> None:
        """Deletes the object (verb ``delete``). ``uid`` and
        ``resource_version`` are preconditions (a :class:`Conflict` if the
        object no longer matches); ``propagation`` is ``"orphan"``,
        ``"background"`` or ``"foreground"`` (default: the kind's)."""
        if propagation is not None and propagation not in PROPAGATIONS:
            raise ValueError(f"propagation must be one of {', '.join(PROPAGATIONS)}, got {propagation!r}")
        _host.kube_delete(self._target(name), uid, resource_version, propagation)

    # Writes of the status subresource.

    def replace_status(self, name: str, obj: JsonBody) -> KubeObject:
        """Replaces the object's status (verb ``update`` on ``status``)."""
        return self._parse(_host.kube_replace(self._target(name, "status"), self._body(obj, name)))

    def patch_status(self, name: str, patch: JsonBody, type: str = "merge") -> KubeObject:
        """Patches the object's status (verb ``patch`` on ``status``), e.g.
        ``patch_status("web", {"status": {"phase": "Ready"}})``."""
        return self._parse(_host.kube_patch(self._target(name, "status"), _patch_type(type),
                                            _text(patch, "the patch")))

    def apply_status(self, name: str, obj: JsonBody, force: bool = False) -> KubeObject:
        """Server-side applies the object's status (verb ``apply`` on ``status``)."""
        return self._parse(_host.kube_apply(self._target(name, "status"), self._body(obj, name), bool(force)))


def _patch_type(patch_type: str) -> str:
    if patch_type not in PATCH_TYPES:
        raise ValueError(f"patch type must be one of {', '.join(PATCH_TYPES)}, got {patch_type!r}")
    return patch_type


__all__ = [
    "Api", "Target", "PATCH_TYPES", "PROPAGATIONS", "KubeError", "NotGranted", "NotFound",
    "AlreadyExists", "Conflict", "Invalid", "Cause", "Forbidden", "TooManyRequests", "Timeout",
    "Unavailable", "Failed",
]
