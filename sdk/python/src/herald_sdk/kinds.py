"""Kinds and objects: :class:`GroupVersionKind`, the dict-based
:class:`KubeObject` with metadata accessors, and small typed views of common
kinds (:class:`Pod`, :class:`Deployment`, ...).

Objects are the parsed JSON the API server sent, so every field is reachable
with ordinary ``dict`` indexing; the accessors only save the ``.get`` chains
for the fields nearly every plugin reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional


@dataclass(frozen=True, order=True)
class GroupVersionKind:
    """A Kubernetes group, version and kind, e.g. ``apps``/``v1``/``Deployment``.
    The core group is the empty string."""

    #: The API group; empty for the core group (Pods, Services, ...).
    group: str
    #: The API version within the group, e.g. ``v1``.
    version: str
    #: The kind, e.g. ``Deployment``.
    kind: str

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` string: ``group/version``, or ``version`` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @classmethod
    def from_api_version(cls, api_version: str, kind: str) -> "GroupVersionKind":
        """The kind named by an object's ``apiVersion`` and ``kind`` fields."""
        group, _, version = api_version.rpartition("/")
        return cls(group, version, kind)

    def __str__(self) -> str:
        return f"{self.api_version}/{self.kind}"


class KubeObject(dict):
    """A Kubernetes object: the ``dict`` parsed from its JSON, plus read-only
    accessors for its identity and metadata. Missing fields read as empty
    values (``""``, ``{}``, ``[]``) or ``None``, never raise."""

    #: The kind of the typed views below; ``None`` on the generic class.
    KIND: Optional[GroupVersionKind] = None
    #: The plural resource name of :attr:`KIND`, e.g. ``pods``.
    RESOURCE: Optional[str] = None

    @property
    def metadata(self) -> Dict[str, Any]:
        """``metadata``, or ``{}``."""
        return self.get("metadata") or {}

    @property
    def name(self) -> str:
        """``metadata.name``, or ``""``."""
        return self.metadata.get("name") or ""

    @property
    def namespace(self) -> Optional[str]:
        """``metadata.namespace``; ``None`` for cluster-scoped objects."""
        return self.metadata.get("namespace") or None

    @property
    def key(self) -> str:
        """``namespace/name``, or ``name`` when cluster-scoped: the informer's key."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @property
    def uid(self) -> str:
        """``metadata.uid``, or ``""``."""
        return self.metadata.get("uid") or ""

    @property
    def resource_version(self) -> str:
        """``metadata.resourceVersion``, or ``""``."""
        return self.metadata.get("resourceVersion") or ""

    @property
    def generation(self) -> Optional[int]:
        """``metadata.generation``, or ``None``."""
        return self.metadata.get("generation")

    @property
    def labels(self) -> Dict[str, str]:
        """``metadata.labels``, or ``{}``."""
        return self.metadata.get("labels") or {}

    @property
    def annotations(self) -> Dict[str, str]:
        """``metadata.annotations``, or ``{}``."""
        return self.metadata.get("annotations") or {}

    @property
    def owner_references(self) -> List[Dict[str, Any]]:
        """``metadata.ownerReferences``, or ``[]``."""
        return self.metadata.get("ownerReferences") or []

    @property
    def deletion_timestamp(self) -> Optional[str]:
        """``metadata.deletionTimestamp`` (the object is being deleted), or ``None``."""
        return self.metadata.get("deletionTimestamp")

    @property
    def api_version(self) -> str:
        """``apiVersion``, or ``""``."""
        return self.get("apiVersion") or ""

    @property
    def kind(self) -> str:
        """``kind``, or ``""``."""
        return self.get("kind") or ""

    @property
    def group_version_kind(self) -> Optional[GroupVersionKind]:
        """The kind named by ``apiVersion`` and ``kind``; ``None`` if either is missing."""
        if not self.api_version or not self.kind:
            return None
        return GroupVersionKind.from_api_version(self.api_version, self.kind)

    @property
    def spec(self) -> Dict[str, Any]:
        """``spec``, or ``{}``."""
        return self.get("spec") or {}

    @property
    def status(self) -> Dict[str, Any]:
        """``status``, or ``{}``."""
        return self.get("status") or {}


def _images(containers: List[Dict[str, Any]]) -> List[str]:
    return [container.get("image") or "" for container in containers]


class _PodSpecHelpers:
    """Accessors over a Pod spec, shared by Pods and workload templates."""

    def _pod_spec(self) -> Dict[str, Any]:
        raise NotImplementedError

    @property
    def containers(self) -> List[Dict[str, Any]]:
        """The pod spec's ``containers``, or ``[]``."""
        return self._pod_spec().get("containers") or []

    @property
    def init_containers(self) -> List[Dict[str, Any]]:
        """The pod spec's ``initContainers``, or ``[]``."""
        return self._pod_spec().get("initContainers") or []

    @property
    def images(self) -> List[str]:
        """The image of every init container, then of every container, in order."""
        return _images(self.init_containers) + _images(self.containers)


class Pod(_PodSpecHelpers, KubeObject):
    """A ``v1`` Pod."""

    KIND = GroupVersionKind("", "v1", "Pod")
    RESOURCE = "pods"

    def _pod_spec(self) -> Dict[str, Any]:
        return self.spec

    @property
    def phase(self) -> str:
        """``status.phase`` (``Pending``, ``Running``, ...), or ``""``."""
        return self.status.get("phase") or ""

    @property
    def node_name(self) -> Optional[str]:
        """``spec.nodeName``: the node it is bound to, or ``None``."""
        return self.spec.get("nodeName")

    @property
    def container_statuses(self) -> List[Dict[str, Any]]:
        """``status.containerStatuses``, or ``[]``."""
        return self.status.get("containerStatuses") or []

    @property
    def restart_count(self) -> int:
        """The sum of ``restartCount`` over the container statuses."""
        return sum(status.get("restartCount") or 0 for status in self.container_statuses)


class _Workload(_PodSpecHelpers, KubeObject):
    """Accessors shared by the kinds that run Pods from a template."""

    def _pod_spec(self) -> Dict[str, Any]:
        return (self.spec.get("template") or {}).get("spec") or {}

    @property
    def selector(self) -> Optional[str]:
        """``spec.selector`` as a label selector string (see
        :func:`herald_sdk.cache.label_selector`); ``None`` when it selects everything."""
        from herald_sdk.cache import label_selector

        return label_selector(self.spec.get("selector") or {})


class _Replicated(_Workload):
    """Accessors shared by the kinds with a replica count."""

    @property
    def replicas(self) -> int:
        """``spec.replicas`` (Kubernetes defaults it to 1)."""
        replicas = self.spec.get("replicas")
        return 1 if replicas is None else replicas

    @property
    def ready_replicas(self) -> int:
        """``status.readyReplicas``, or 0."""
        return self.status.get("readyReplicas") or 0


class Deployment(_Replicated):
    """An ``apps/v1`` Deployment."""

    KIND = GroupVersionKind("apps", "v1", "Deployment")
    RESOURCE = "deployments"


class ReplicaSet(_Replicated):
    """An ``apps/v1`` ReplicaSet."""

    KIND = GroupVersionKind("apps", "v1", "ReplicaSet")
    RESOURCE = "replicasets"


class StatefulSet(_Replicated):
    """An ``apps/v1`` StatefulSet."""

    KIND = GroupVersionKind("apps", "v1", "StatefulSet")
    RESOURCE = "statefulsets"


class DaemonSet(_Workload):
    """An ``apps/v1`` DaemonSet."""

    KIND = GroupVersionKind("apps", "v1", "DaemonSet")
    RESOURCE = "daemonsets"


class Job(_Workload):
    """A ``batch/v1`` Job."""

    KIND = GroupVersionKind("batch", "v1", "Job")
    RESOURCE = "jobs"


class Service(KubeObject):
    """A ``v1`` Service."""

    KIND = GroupVersionKind("", "v1", "Service")
    RESOURCE = "services"


class ConfigMap(KubeObject):
    """A ``v1`` ConfigMap."""

    KIND = GroupVersionKind("", "v1", "ConfigMap")
    RESOURCE = "configmaps"

    @property
    def data(self) -> Dict[str, str]:
        """``data``, or ``{}``."""
        return self.get("data") or {}


class Secret(KubeObject):
    """A ``v1`` Secret (its ``data`` values are base64, as the API sends them)."""

    KIND = GroupVersionKind("", "v1", "Secret")
    RESOURCE = "secrets"


class Namespace(KubeObject):
    """A ``v1`` Namespace (cluster-scoped)."""

    KIND = GroupVersionKind("", "v1", "Namespace")
    RESOURCE = "namespaces"


class Node(KubeObject):
    """A ``v1`` Node (cluster-scoped)."""

    KIND = GroupVersionKind("", "v1", "Node")
    RESOURCE = "nodes"

    @property
    def unschedulable(self) -> bool:
        """``spec.unschedulable`` (cordoned)."""
        return bool(self.spec.get("unschedulable"))


#: Every typed view, by kind.
TYPED_KINDS: Dict[GroupVersionKind, type] = {
    view.KIND: view
    for view in (Pod, Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, Service, ConfigMap,
                 Secret, Namespace, Node)
}


def resource_of(kind: GroupVersionKind) -> str:
    """The plural resource name of ``kind``: exact for the typed views, else
    the usual English plural of the lowercase kind (``NetworkPolicy`` ->
    ``networkpolicies``), which is what discovery returns for most CRDs."""
    view = TYPED_KINDS.get(kind)
    if view is not None:
        return view.RESOURCE
    lower = kind.kind.lower()
    if lower.endswith("y") and lower[-2:-1] not in ("a", "e", "i", "o", "u"):
        return lower[:-1] + "ies"
    if lower.endswith(("s", "x", "ch", "sh")):
        return lower + "es"
    return lower + "s"


def as_kind(kind: Any) -> GroupVersionKind:
    """``kind`` as a :class:`GroupVersionKind`: accepts one, or a typed view
    class such as :class:`Pod`. Raises ``TypeError`` otherwise."""
    if isinstance(kind, GroupVersionKind):
        return kind
    if isinstance(kind, type) and issubclass(kind, KubeObject) and kind.KIND is not None:
        return kind.KIND
    raise TypeError(f"expected a GroupVersionKind or a typed kind such as Pod, got {kind!r}")


def view_for(kind: Any) -> type:
    """The class objects of ``kind`` are returned as: the typed view when
    ``kind`` is one (or names one), else :class:`KubeObject`."""
    if isinstance(kind, type) and issubclass(kind, KubeObject):
        return kind
    return TYPED_KINDS.get(kind, KubeObject)


__all__ = [
    "GroupVersionKind", "KubeObject", "Pod", "Deployment", "ReplicaSet", "StatefulSet",
    "DaemonSet", "Job", "Service", "ConfigMap", "Secret", "Namespace", "Node", "TYPED_KINDS",
    "resource_of", "as_kind", "view_for",
]
