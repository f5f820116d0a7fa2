"""Read-only look-ups in the host's shared cache (a lister). Only kinds the
plugin subscribed to are visible, and only within each subscription's
namespace and selectors.

.. code-block:: python

    from herald_sdk import cache
    from herald_sdk.kinds import ReplicaSet

    replica_sets = cache.list(ReplicaSet, "shop", "app=web")
    one = cache.get(ReplicaSet, "shop", "web-5d8f7")   # None if not cached
    node = cache.get(Node, None, "node-1")             # cluster-scoped: no namespace

The arguments come in the Rust SDK's order (``cache::get::<ReplicaSet>(ns,
name)``): kind, namespace, then name or selector. Objects come back as the
kind's typed view (:class:`~herald_sdk.kinds.ReplicaSet` here) or as
:class:`~herald_sdk.kinds.KubeObject` for other kinds. A kind not subscribed
to raises :class:`~herald_sdk.NotSubscribed`; a selector that does not parse
raises :class:`~herald_sdk.InvalidSelector`.

Look-ups by a label selector scan the objects of the subscription. A plugin
that looks objects up by the same thing on every call declares an
:class:`Index` in its manifest instead (client-go's indexers): the host files
every cached object under its value, so :func:`by_index` costs the objects
it finds, whatever the size of the cache::

    manifest = (Manifest("rollouts", "0.1.0")
                .subscribe(Subscription.to(Deployment))
                .subscribe(Subscription.to(ReplicaSet))
                .index(Index.by_owner("owner", ReplicaSet)))

    # In a handler: the ReplicaSets a Deployment (its UID) owns.
    owned = cache.by_index("owner", deployment.uid, namespace="shop", kind=ReplicaSet)
"""

from __future__ import annotations

import builtins
import json
from typing import Any, Dict, List, Optional

from herald_sdk import _host
from herald_sdk.kinds import GroupVersionKind, KubeObject, as_kind, view_for


def get(kind: Any, namespace: Optional[str], name: str) -> Optional[KubeObject]:
    """The cached object of ``kind`` named ``name`` in ``namespace``
    (``None`` for a cluster-scoped kind), or ``None`` if it is not cached.
    ``kind`` is a typed view such as ``Pod`` or a :class:`~herald_sdk.GroupVersionKind`."""
    text = get_json(kind, namespace, name)
    return None if text is None else view_for(kind)(json.loads(text))


def list(kind: Any, namespace: Optional[str] = None,
         label_selector: Optional[str] = None) -> builtins.list:
    """Every cached object of ``kind``, only in ``namespace`` if given, and
    only those matching ``label_selector`` if given (e.g. ``app=web,tier!=cache``)."""
    view = view_for(kind)
    return [view(json.loads(text)) for text in list_json(kind, namespace, label_selector)]


def get_json(kind: Any, namespace: Optional[str], name: str) -> Optional[str]:
    """Like :func:`get`, the object as JSON text."""
    if not isinstance(name, str):
        raise TypeError(f"cache.get takes (kind, namespace, name): name must be a string, got {name!r}")
    return _host.cache_get(as_kind(kind), namespace, name)


def list_json(kind: Any, namespace: Optional[str] = None,
              label_selector: Optional[str] = None) -> List[str]:
    """Like :func:`list`, the objects as JSON texts."""
    return _host.cache_list(as_kind(kind), namespace, label_selector)


class Index:
    """A secondary index of the cache, declared with
    :meth:`herald_sdk.Manifest.index` and looked up with :func:`by_index`.
    The host keeps it for the informer of its kind (shared with every plugin
    declaring the same one) and refuses to load a plugin whose index names a
    kind it does not subscribe to."""

    def __init__(self, name: str, kind: Any, by: str, key: Optional[str] = None) -> None:
        if by not in ("label", "field", "owner"):
            raise ValueError(f"an index is by 'label', 'field' or 'owner', got {by!r}")
        if (by == "owner") != (key is None):
            raise ValueError("an index by label or field names its key or path; one by owner none")
        #: The name it is looked up by; unique in the manifest.
        self.name = name
        #: The kind whose cached objects it files.
        self.kind: GroupVersionKind = as_kind(kind)
        #: What it files them under: ``"label"``, ``"field"`` or ``"owner"``.
        self.by = by
        #: The label key or the field path (``spec.nodeName``); ``None`` by owner.
        self.key = key

    @classmethod
    def by_owner(cls, name: str, kind: Any) -> "Index":
        """Objects of ``kind`` by the UIDs of their owners: the ReplicaSets of
        a Deployment, the Pods of a ReplicaSet."""
        return cls(name, kind, "owner")

    @classmethod
    def by_label(cls, name: str, kind: Any, key: str) -> "Index":
        """Objects of ``kind`` by the value of label ``key``; objects without it are not filed."""
        return cls(name, kind, "label", key)

    @classmethod
    def by_field(cls, name: str, kind: Any, path: str) -> "Index":
        """Objects of ``kind`` by the value at a field path such as
        ``spec.nodeName``; a string, number or boolean is filed as its text."""
        return cls(name, kind, "field", path)

    def values(self, obj: Dict[str, Any]) -> builtins.list:
        """The values ``obj`` is filed under, as the host computes them."""
        def text(value: Any) -> Optional[str]:
            if isinstance(value, bool):
                return "true" if value else "false"
            if isinstance(value, (str, int, float)):
                return value if isinstance(value, str) else json.dumps(value)
            return None

        metadata = obj.get("metadata") or {}
        if self.by == "owner":
            return [owner["uid"] for owner in metadata.get("ownerReferences") or [] if owner.get("uid")]
        if self.by == "label":
            found = text((metadata.get("labels") or {}).get(self.key))
        else:
            value: Any = obj
            for step in self.key.split("."):
                value = value.get(step) if isinstance(value, dict) else None
            found = text(value)
        return [] if found is None else [found]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Index) and vars(self) == vars(other)

    def __repr__(self) -> str:
        key = "" if self.key is None else f", {self.key!r}"
        return f"Index.by_{self.by}({self.name!r}, {self.kind}{key})"


def by_index(name: str, value: str, namespace: Optional[str] = None, kind: Any = None) -> builtins.list:
    """The cached objects that the manifest's index ``name`` files under
    ``value`` (only in ``namespace``, if given), sorted by key. They come
    back as ``kind``'s typed view when ``kind`` is given, else as
    :class:`~herald_sdk.kinds.KubeObject`. An index the manifest does not
    declare raises :class:`~herald_sdk.UnknownIndex`."""
    view = view_for(kind) if kind is not None else KubeObject
    return [view(json.loads(text)) for text in by_index_json(name, value, namespace)]


def by_index_json(name: str, value: str, namespace: Optional[str] = None) -> List[str]:
    """Like :func:`by_index`, as JSON texts."""
    return _host.index_lookup(name, value, namespace)


def label_selector(selector: Dict[str, Any]) -> Optional[str]:
    """The label selector string for a ``spec.selector`` such as a
    Deployment's, e.g. ``app=web,tier in (api,cache)``; ``None`` when it
    selects everything. ``matchLabels`` become ``key=value``;
    ``matchExpressions`` become ``key in (...)``, ``key notin (...)``,
    ``key`` and ``!key``."""
    requirements = [f"{key}={value}" for key, value in (selector.get("matchLabels") or {}).items()]
    for expression in selector.get("matchExpressions") or []:
        key = expression.get("key", "")
        values = ",".join(expression.get("values") or [])
        operator = expression.get("operator")
        if operator == "In":
            requirements.append(f"{key} in ({values})")
        elif operator == "NotIn":
            requirements.append(f"{key} notin ({values})")
        elif operator == "Exists":
            requirements.append(key)
        elif operator == "DoesNotExist":
            requirements.append(f"!{key}")
        else:
            raise ValueError(f"unknown label selector operator {operator!r}")
    return ",".join(requirements) or None
