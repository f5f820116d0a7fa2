"""The host's imports, through the bindings componentize-py generates when
it builds the component (module ``wit_world``). Only imported inside the
component. Not a public API."""

from __future__ import annotations

from typing import List, Optional

from componentize_py_types import Err
from wit_world.imports import cache as wit_cache
from wit_world.imports import config as wit_config
from wit_world.imports import log as wit_log
from wit_world.imports import types as wit_types

from herald_sdk.errors import InvalidSelector, NotSubscribed
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
