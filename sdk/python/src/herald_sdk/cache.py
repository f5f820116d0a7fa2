"""Read-only look-ups in the host's shared cache (a lister). Only kinds the
plugin subscribed to are visible, and only within each subscription's
namespace and selectors.

.. code-block:: python

    from herald_sdk import cache
    from herald_sdk.kinds import ReplicaSet

    replica_sets = cache.list(ReplicaSet, namespace="shop", label_selector="app=web")
    one = cache.get(ReplicaSet, "web-5d8f7", namespace="shop")   # None if not cached

Objects come back as the kind's typed view (:class:`~herald_sdk.kinds.ReplicaSet`
here) or as :class:`~herald_sdk.kinds.KubeObject` for other kinds. A kind not
subscribed to raises :class:`~herald_sdk.NotSubscribed`; a selector that does
not parse raises :class:`~herald_sdk.InvalidSelector`.
"""

from __future__ import annotations

import builtins
import json
from typing import Any, Dict, List, Optional

from herald_sdk import _host
from herald_sdk.kinds import KubeObject, as_kind, view_for


def get(kind: Any, name: str, namespace: Optional[str] = None) -> Optional[KubeObject]:
    """The cached object of ``kind`` named ``name`` (in ``namespace``; leave
    it out for a cluster-scoped kind), or ``None`` if it is not cached.
    ``kind`` is a typed view such as ``Pod`` or a :class:`~herald_sdk.GroupVersionKind`."""
    text = get_json(kind, name, namespace)
    return None if text is None else view_for(kind)(json.loads(text))


def list(kind: Any, namespace: Optional[str] = None,
         label_selector: Optional[str] = None) -> builtins.list:
    """Every cached object of ``kind``, only in ``namespace`` if given, and
    only those matching ``label_selector`` if given (e.g. ``app=web,tier!=cache``)."""
    view = view_for(kind)
    return [view(json.loads(text)) for text in list_json(kind, namespace, label_selector)]


def get_json(kind: Any, name: str, namespace: Optional[str] = None) -> Optional[str]:
    """Like :func:`get`, the object as JSON text."""
    return _host.cache_get(as_kind(kind), namespace, name)


def list_json(kind: Any, namespace: Optional[str] = None,
              label_selector: Optional[str] = None) -> List[str]:
    """Like :func:`list`, the objects as JSON texts."""
    return _host.cache_list(as_kind(kind), namespace, label_selector)


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
