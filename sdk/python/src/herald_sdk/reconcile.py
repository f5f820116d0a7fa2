"""Controllers as controller-runtime and kube-rs authors write them: one
``reconcile`` for a primary kind, the objects it owns and the ones it
watches mapped to the primary's key, and an :class:`Action` telling the
host when to look again.

.. code-block:: python

    import herald_sdk
    from herald_sdk import Manifest
    from herald_sdk.kinds import Deployment, ReplicaSet
    from herald_sdk.reconcile import Action, Controller, Reconciler

    class Rollouts(Reconciler):
        @classmethod
        def controller(cls):
            return Controller(Deployment, Manifest("rollouts", "0.1.0")).owns(ReplicaSet)

        def reconcile(self, request, deployment):
            if deployment is None:
                return Action.await_change()       # gone: nothing to do
            return Action.requeue_after(300)

    herald_sdk.export_plugin(Rollouts)

The names are the Rust SDK's (``herald_sdk::reconcile``: ``Controller``,
``owns``, ``watches``, ``Request``, ``Action``, ``finalizer``,
``set_condition``), which follow kube-rs's; the Go SDK's package keeps
controller-runtime's (``For``, ``Owns``, ``Watches``, ``Result``).

**What the host guarantees, and how.** Every kind the controller names is
subscribed with coalesced delivery: a burst of changes to one object is one
call with its latest state, and a plugin's calls never overlap, so one key
is never reconciled twice at once. Each notification is mapped to the
primary keys it concerns (its own key for the primary kind; its controller
owner for an owned kind; what the map function returns for a watched
kind), and each key is reconciled against the cache's current state of the
primary object, which is at least as new as the notification: every change
is followed by a reconcile that sees it (level-based, as
controller-runtime's).

:meth:`Action.await_change` (or returning ``None``) is done;
:meth:`Action.requeue_after` asks for the notification again after the
delay (:func:`herald_sdk.workqueue.requeue_after`: it maps to the same keys
again, and a newer change takes its place); an exception is retried with
the host's per-key exponential backoff, as controller-runtime's rate
limiter. When one notification maps to several keys each is reconciled,
the shortest requeue wins, and an exception retries the notification
(reconciles are idempotent, as in controller-runtime).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from herald_sdk import cache, kube, workqueue
from herald_sdk.errors import HandlerError
from herald_sdk.event import Event, Update
from herald_sdk.handler import Handler
from herald_sdk.kinds import GroupVersionKind, KubeObject, as_kind, view_for
from herald_sdk.manifest import Manifest, Subscription

__all__ = ["Request", "Action", "Controller", "Reconciler", "finalizer", "set_condition"]


@dataclass(frozen=True, order=True)
class Request:
    """What to reconcile: the primary object's namespace (``None`` for a
    cluster-scoped kind) and name (controller-runtime's
    ``reconcile.Request``, kube-rs's ``ObjectRef``)."""

    namespace: Optional[str]
    name: str

    def __str__(self) -> str:
        return self.name if self.namespace is None else f"{self.namespace}/{self.name}"


class Action:
    """What a reconcile asks for next (kube-rs's ``Action``,
    controller-runtime's ``ctrl.Result``). An error is not an action: raise
    it to be retried with backoff."""

    __slots__ = ("requeue_after_ms",)

    def __init__(self, requeue_after_ms: Optional[int]) -> None:
        self.requeue_after_ms = requeue_after_ms

    @classmethod
    def await_change(cls) -> "Action":
        """Done until something changes."""
        return cls(None)

    @classmethod
    def requeue_after(cls, seconds: float = 0, milliseconds: int = 0) -> "Action":
        """Look again after ``seconds`` plus ``milliseconds``, even if
        nothing changes."""
        delay = int(seconds * 1000) + int(milliseconds)
        if delay < 0:
            raise ValueError(f"Action.requeue_after: the delay must not be negative, got {delay} ms")
        return cls(delay)

    def _sooner(self, other: "Action") -> "Action":
        if self.requeue_after_ms is None:
            return other
        if other.requeue_after_ms is None or self.requeue_after_ms < other.requeue_after_ms:
            return self
        return other

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Action) and other.requeue_after_ms == self.requeue_after_ms

    def __repr__(self) -> str:
        if self.requeue_after_ms is None:
            return "Action.await_change()"
        return f"Action.requeue_after(milliseconds={self.requeue_after_ms})"


MapFn = Callable[[KubeObject], List[Request]]

# How a notification of one kind reaches the primary keys.
_PRIMARY, _OWNED = "primary", "owned"


class Controller:
    """The controller's shape: its primary kind (``For``), the kinds it
    owns and watches, and the plugin's manifest, to which each is added as
    a coalesced subscription.

    ``primary`` is a typed view (``Deployment``) or a
    :class:`~herald_sdk.GroupVersionKind` (a CRD's)."""

    def __init__(self, primary: Any, manifest: Manifest) -> None:
        self._primary = as_kind(primary)
        self._view = view_for(primary)
        self._manifest = manifest.subscribe(Subscription.to(self._primary).coalesced())
        self._cluster_scoped = False
        self._generation_changed = False
        self._sources: List[Tuple[GroupVersionKind, Any]] = [(self._primary, _PRIMARY)]

    @property
    def primary(self) -> GroupVersionKind:
        """The primary kind."""
        return self._primary

    @property
    def manifest(self) -> Manifest:
        """The plugin's manifest, with the controller's subscriptions."""
        return self._manifest

    def cluster_scoped(self) -> "Controller":
        """Says the primary kind is cluster-scoped: an owned object's owner
        is then looked up without its namespace."""
        self._cluster_scoped = True
        return self

    def generation_changed(self) -> "Controller":
        """Reconciles the primary kind's updates only when its
        ``metadata.generation`` changed (controller-runtime's
        ``GenerationChangedPredicate``): a status or metadata change, or a
        periodic resync, reconciles nothing. Adds, deletes, requeues, and
        the owned and watched kinds' changes still reconcile."""
        self._generation_changed = True
        return self

    def filters(self, event: Update) -> bool:
        """Whether :meth:`generation_changed` filters out the update
        ``event``: one of the primary kind with the same generation, and a
        change of the object (a requeue re-delivers the same
        ``resourceVersion``) or a resync."""
        if not self._generation_changed or (event.kind.group, event.kind.kind) != (
                self._primary.group, self._primary.kind):
            return False
        old, new = event.old, event.new
        return old.generation == new.generation and (
            old.resource_version != new.resource_version or event.is_resync)

    def owns(self, kind: Any) -> "Controller":
        """Also reconciles the controller owner of every object of ``kind``
        that changes (``Owns``): its owner reference with
        ``controller: true`` whose kind and group are the primary's."""
        return self._source(kind, _OWNED)

    def watches(self, kind: Any, map_fn: MapFn) -> "Controller":
        """Also reconciles what ``map_fn`` returns (a list of
        :class:`Request`) for every object of ``kind`` that changes
        (``Watches`` with ``EnqueueRequestsFromMapFunc``). A map that needs
        other objects reads them from the cache; an index
        (:meth:`herald_sdk.cache.by_index`) keeps it to the objects that
        match."""
        if not callable(map_fn):
            raise TypeError(f"watches({as_kind(kind)}) needs a function mapping an object to Requests")
        return self._source(kind, map_fn)

    def _source(self, kind: Any, source: Any) -> "Controller":
        gvk = as_kind(kind)
        self._manifest = self._manifest.subscribe(Subscription.to(gvk).coalesced())
        self._sources.append((gvk, source))
        return self

    def requests(self, kind: GroupVersionKind, obj: KubeObject) -> List[Request]:
        """The primary keys a notification of ``kind`` about ``obj``
        concerns."""
        for known, source in self._sources:
            if known.group == kind.group and known.kind == kind.kind:
                break
        else:
            raise HandlerError(
                f"a notification of {kind}, which the controller neither reconciles, owns nor watches")
        if source == _PRIMARY:
            return [Request(obj.namespace, obj.name)]
        if source == _OWNED:
            owner = next((o for o in obj.owner_references if o.get("controller") is True), None)
            if owner is None or owner.get("kind") != self._primary.kind:
                return []
            group = owner.get("apiVersion", "").rpartition("/")[0]
            if group != self._primary.group:
                return []
            namespace = None if self._cluster_scoped else obj.namespace
            return [Request(namespace, owner.get("name", ""))]
        requests = source(obj)
        if not isinstance(requests, list) or not all(isinstance(r, Request) for r in requests):
            raise HandlerError(f"the map function of {kind} returned {requests!r}, not a list of Requests")
        return requests


class Reconciler(Handler):
    """A controller: subclass it, define :meth:`controller` and
    :meth:`reconcile`, and export the class with
    :func:`herald_sdk.export_plugin`. Its ``manifest()`` and handlers are
    this class's: each notification is mapped to its primary keys and each
    key reconciled."""

    @classmethod
    def controller(cls) -> Controller:
        """What it reconciles, owns and watches, and the plugin's manifest."""
        raise NotImplementedError(f"{cls.__name__} must define controller()")

    def reconcile(self, request: Request, obj: Optional[KubeObject]) -> Optional[Action]:
        """Brings the world in line with ``obj``, the cache's current state
        of the primary object ``request`` names (``None``: it is gone).
        Called again after every change of it or of what maps to it.
        Returns an :class:`Action` (``None`` is :meth:`Action.await_change`)."""
        raise NotImplementedError(f"{type(self).__name__} must define reconcile()")

    @classmethod
    def manifest(cls) -> Manifest:
        return cls.controller().manifest

    def on_add(self, event: Event) -> None:
        self._notified(event.kind, event.object)

    def on_update(self, event: Update) -> None:
        if not self._controller().filters(event):
            self._notified(event.kind, event.new)

    def on_delete(self, event: Event) -> None:
        self._notified(event.kind, event.object)

    def _controller(self) -> Controller:
        controller = self.__dict__.get("_herald_controller")
        if controller is None:
            controller = self.__dict__["_herald_controller"] = type(self).controller()
        return controller

    def _notified(self, kind: GroupVersionKind, obj: KubeObject) -> None:
        controller = self._controller()
        next_action = Action.await_change()
        failed: Optional[BaseException] = None
        for request in controller.requests(kind, obj):
            try:
                action = self._reconcile_one(controller, request)
            except Exception as error:  # every key is tried; the first failure is raised
                if failed is None:
                    failed = error
                continue
            next_action = next_action._sooner(action)
        if failed is not None:
            raise failed
        if next_action.requeue_after_ms is not None:
            workqueue.requeue_after(milliseconds=next_action.requeue_after_ms)

    def _reconcile_one(self, controller: Controller, request: Request) -> Action:
        try:
            current = cache.get(controller.primary, request.namespace, request.name)
        except Exception as error:
            raise HandlerError(f"reading {controller.primary} {request}: {error}") from error
        try:
            action = self.reconcile(request, current)
        except Exception as error:
            raise HandlerError(f"reconciling {request}: {error}") from error
        if action is None:
            return Action.await_change()
        if not isinstance(action, Action):
            raise HandlerError(
                f"reconciling {request}: reconcile returned {action!r}, not an Action (or None)")
        return action


class Apply:
    """What :func:`finalizer` asks of the reconcile it wraps: the object
    lives, with the finalizer on it: reconcile it."""

    def __init__(self, obj: KubeObject) -> None:
        self.object = obj


class Cleanup:
    """What :func:`finalizer` asks of the reconcile it wraps: the object is
    being deleted; clean up what it made. The finalizer is removed once the
    function returns; raising keeps it, and the cleanup runs again."""

    def __init__(self, obj: KubeObject) -> None:
        self.object = obj


#: What this instance did to objects' finalizers, keyed by kind, object and
#: finalizer, oldest first, at most ``_REMEMBERED`` each (a forgotten one
#: costs at most a repeated, idempotent write or cleanup): the
#: resourceVersion each finalizer change was written at, and the UID of the
#: object each cleanup succeeded for.
_WRITTEN: Dict[str, str] = {}
_CLEANED: Dict[str, str] = {}
_REMEMBERED = 1024


def _keep(record: Dict[str, str], key: str, value: str) -> None:
    """Records ``value`` for ``key`` in ``record``, forgetting the oldest
    key when full."""
    record.pop(key, None)
    if len(record) == _REMEMBERED:
        record.pop(next(iter(record)))
    record[key] = value


def finalizer(obj: KubeObject, name: str,
              reconcile: Callable[[Any], Optional[Action]]) -> Action:
    """Runs ``reconcile`` with ``name`` as ``obj``'s finalizer, as kube-rs's
    ``finalizer``: a live object without it gets it added (the change brings
    the next reconcile); a live object with it is reconciled with
    :class:`Apply`; an object being deleted with it is cleaned up
    (:class:`Cleanup`), then the finalizer removed; an object being deleted
    without it needs nothing. Both writes are merge patches carrying the
    ``resourceVersion`` read, so a concurrent change fails with a conflict
    and the reconcile is retried (a cleanup must be idempotent). The plugin
    needs ``patch`` on the kind in its write rules.

    A state of the object this instance already wrote its finalizer change
    at (the same ``resourceVersion``: the cache has not caught up with the
    write yet, and another notification mapped here) is left alone: the
    write's own change brings the next reconcile. So a cleanup that
    succeeded is not run again on the stale state, and an add does not fail
    with a conflict. Nor is a cleanup that succeeded run again when the
    finalizer's removal fails (a conflict with a write that landed after the
    deletion, say): the instance remembers the object (by UID) as cleaned
    up, and the retry only removes the finalizer. Only a new instance (a
    host restart, a hot swap, a trap) cleans up again, as any controller
    stopped between the two steps."""
    kind = obj.group_version_kind
    if kind is None or not obj.name:
        raise HandlerError(f"finalizer {name}: the object has no apiVersion, kind or name")
    key = f"{kind} {obj.namespace or ''}/{obj.name} {name}"
    version = obj.resource_version
    if version and _WRITTEN.get(key) == version:
        return Action.await_change()
    finalizers = list(obj.metadata.get("finalizers") or [])
    has = name in finalizers
    deleting = obj.deletion_timestamp is not None
    api = kube.Api(kind, namespace=obj.namespace)

    def write(finalizers: List[str], doing: str) -> None:
        patch = {"metadata": {"finalizers": finalizers, "resourceVersion": version}}
        try:
            api.patch(obj.name, patch)
        except kube.KubeError as error:
            # The same error (its case, its causes), saying what it was doing.
            error.message = f"{doing} finalizer {name}: {error.message}"
            error.args = (error.message,) + error.args[1:]
            raise
        if version:
            _keep(_WRITTEN, key, version)

    if not deleting and not has:
        write(finalizers + [name], "adding")
        return Action.await_change()
    if not deleting:
        return reconcile(Apply(obj)) or Action.await_change()
    if has:
        uid = obj.uid
        if uid and _CLEANED.get(key) == uid:
            action = Action.await_change()
        else:
            action = reconcile(Cleanup(obj)) or Action.await_change()
            if uid:
                _keep(_CLEANED, key, uid)
        write([f for f in finalizers if f != name], "removing")
        return action
    return Action.await_change()


def set_condition(conditions: List[Dict[str, Any]], condition: Dict[str, Any]) -> bool:
    """Sets ``condition`` (a ``metav1.Condition`` as a dict: ``type``,
    ``status``, ``reason``, ``message``, ``observedGeneration``,
    ``lastTransitionTime``) in ``conditions`` as controller-runtime's
    ``meta.SetStatusCondition``: one of a new type is added as given; one
    of a known type takes the new status, reason, message and
    ``observedGeneration``, and its ``lastTransitionTime`` moves to the
    given one only when the status changes. True when anything changed."""
    for existing in conditions:
        if existing.get("type") == condition.get("type"):
            before = dict(existing)
            if existing.get("status") != condition.get("status"):
                existing["status"] = condition.get("status")
                existing["lastTransitionTime"] = condition.get("lastTransitionTime")
            for key in ("reason", "message", "observedGeneration"):
                if key in condition:
                    existing[key] = condition[key]
                else:
                    existing.pop(key, None)
            return existing != before
    conditions.append(dict(condition))
    return True
