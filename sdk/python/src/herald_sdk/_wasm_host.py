"""The host's imports, through the bindings componentize-py generates when
it builds the component (module ``wit_world``, world
``herald:plugin/plugin@0.7.0``). Only imported inside the component. Not a
public API."""

from __future__ import annotations

from typing import List, Optional

from componentize_py_types import Err
from wit_world.imports import cache as wit_cache
from wit_world.imports import cluster as wit_cluster
from wit_world.imports import config as wit_config
from wit_world.imports import deadline as wit_deadline
from wit_world.imports import events as wit_events
from wit_world.imports import herald_plugin_types_0_2_0 as wit_types
from wit_world.imports import index as wit_index
from wit_world.imports import kube as wit_kube
from wit_world.imports import log as wit_log
from wit_world.imports import metrics as wit_metrics
from wit_world.imports import workqueue as wit_workqueue

from herald_sdk.errors import (AlreadyExists, Cause, Conflict, Failed, Forbidden, Invalid, InvalidSelector,
                               KubeError, NotFound, NotGranted, NotSubscribed, Timeout, TooManyRequests,
                               Unavailable, UnknownIndex)
from herald_sdk._wasi_http import send
from herald_sdk.kinds import GroupVersionKind


def log(level, message: str) -> None:
    wit_log.log(wit_log.Level(int(level)), message)


def config() -> Optional[str]:
    return wit_config.get()


def _kind(kind: GroupVersionKind):
    return wit_types.GroupVersionKind(kind.group, kind.version, kind.kind)


def _raise_cache_error(error: Err) -> None:
    value = error.value
    if isinstance(value, wit_cache.CacheError_NotSubscribed):
        raise NotSubscribed(GroupVersionKind(value.value.group, value.value.version, value.value.kind)) from None
    if isinstance(value, wit_cache.CacheError_InvalidSelector):
        raise InvalidSelector(value.value) from None
    raise error


def cache_get(kind: GroupVersionKind, namespace: Optional[str], name: str) -> Optional[str]:
    try:
        return wit_cache.get(_kind(kind), namespace, name)
    except Err as error:
        _raise_cache_error(error)


def cache_list(kind: GroupVersionKind, namespace: Optional[str], label_selector: Optional[str]) -> List[str]:
    try:
        return wit_cache.list(_kind(kind), namespace, label_selector)
    except Err as error:
        _raise_cache_error(error)


_SIMPLE_KUBE_ERRORS = {
    wit_kube.KubeError_NotGranted: NotGranted,
    wit_kube.KubeError_NotFound: NotFound,
    wit_kube.KubeError_AlreadyExists: AlreadyExists,
    wit_kube.KubeError_Conflict: Conflict,
    wit_kube.KubeError_Forbidden: Forbidden,
    wit_kube.KubeError_Timeout: Timeout,
    wit_kube.KubeError_Unavailable: Unavailable,
}


def kube_error(value) -> KubeError:
    """The SDK exception for a generated ``kube-error`` case."""
    simple = _SIMPLE_KUBE_ERRORS.get(type(value))
    if simple is not None:
        return simple(value.value)
    if isinstance(value, wit_kube.KubeError_Invalid):
        causes = [Cause(cause.reason, cause.message, cause.field) for cause in value.value.causes]
        return Invalid(value.value.message, causes)
    if isinstance(value, wit_kube.KubeError_TooManyRequests):
        return TooManyRequests(value.value.message, value.value.retry_after_ms)
    if isinstance(value, wit_kube.KubeError_Failed):
        return Failed(value.value.message, value.value.code, value.value.reason)
    return KubeError(f"unknown kube error {value!r}")


def _target(target):
    return wit_kube.Target(_kind(target.kind), target.namespace, target.name, target.subresource)


def _kube(call, *arguments):
    try:
        return call(*arguments)
    except Err as error:
        raise kube_error(error.value) from None


_PATCH_TYPES = {"merge": wit_kube.PatchType.MERGE, "json": wit_kube.PatchType.JSON,
                "strategic": wit_kube.PatchType.STRATEGIC}
_PROPAGATIONS = {"orphan": wit_kube.Propagation.ORPHAN, "background": wit_kube.Propagation.BACKGROUND,
                 "foreground": wit_kube.Propagation.FOREGROUND}


def kube_get(target) -> str:
    return _kube(wit_kube.get, _target(target))


def kube_create(kind: GroupVersionKind, namespace: Optional[str], body: str) -> str:
    return _kube(wit_kube.create, _kind(kind), namespace, body)


def kube_replace(target, body: str) -> str:
    return _kube(wit_kube.replace, _target(target), body)


def kube_patch(target, patch_type: str, patch: str) -> str:
    return _kube(wit_kube.patch, _target(target), _PATCH_TYPES[patch_type], patch)


def kube_apply(target, body: str, force: bool) -> str:
    return _kube(wit_kube.apply, _target(target), body, force)


def kube_delete(target, uid: Optional[str], resource_version: Optional[str], propagation: Optional[str]) -> None:
    options = wit_kube.DeleteOptions(uid, resource_version, None if propagation is None else _PROPAGATIONS[propagation])
    _kube(wit_kube.delete, _target(target), options)


def _reference(reference):
    return wit_events.ObjectReference(_kind(reference.kind), reference.namespace, reference.name, reference.uid,
                                      reference.resource_version)


def events_publish(event) -> None:
    record = wit_events.Event(
        regarding=_reference(event.regarding),
        related=None if event.related is None else _reference(event.related),
        event_type=wit_events.EventType.WARNING if event.type == "Warning" else wit_events.EventType.NORMAL,
        reason=event.reason,
        action=event.action,
        note=event.note,
    )
    _kube(wit_events.publish, record)


def index_lookup(name: str, value: str, namespace: Optional[str]) -> List[str]:
    try:
        return wit_index.lookup(name, value, namespace)
    except Err as error:
        if isinstance(error.value, wit_index.IndexError_UnknownIndex):
            raise UnknownIndex(error.value.value) from None
        raise


def metrics_update(op: str, name: str, label_values: List[str], value: float) -> None:
    # `op` is the name of the `metrics` function: add, set or observe.
    getattr(wit_metrics, op)(name, label_values, value)


def requeue_after(delay_ms: int) -> None:
    wit_workqueue.requeue_after(delay_ms)


def remaining_ms() -> int:
    return wit_deadline.remaining_ms()


def cluster_current() -> str:
    return wit_cluster.current()


def cluster_names() -> List[str]:
    return list(wit_cluster.names())


def cluster_target(name: Optional[str]) -> Optional[str]:
    """Targets ``name``; the refusal's message, or ``None``."""
    try:
        wit_cluster.target(name)
    except Err as refused:
        return str(refused.value)
    return None


#: One request over wasi:http (``herald_sdk.http.Hop`` in, ``Response`` out).
http_send = send
