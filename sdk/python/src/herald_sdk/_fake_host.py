"""The in-process stand-in for the host that the SDK calls off wasm; its
state is driven through :mod:`herald_sdk.testing`. Not a public API."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Set, Tuple

from herald_sdk.errors import InvalidSelector, NotSubscribed
from herald_sdk.kinds import GroupVersionKind


@dataclass(frozen=True)
class LogLine:
    """One line a plugin logged."""

    #: Its severity (a :class:`herald_sdk.log.Level`).
    level: object
    #: Its text.
    message: str


@dataclass
class FakeHostState:
    """Everything the stand-in host holds."""

    config: Optional[str] = None
    logs: List[LogLine] = field(default_factory=list)
    subscribed: Set[GroupVersionKind] = field(default_factory=set)
    #: Objects by kind, then by (namespace, name), as JSON text.
    cache: Dict[GroupVersionKind, Dict[Tuple[Optional[str], str], str]] = field(default_factory=dict)


STATE = FakeHostState()


def reset() -> None:
    global STATE
    STATE = FakeHostState()


def log(level, message: str) -> None:
    STATE.logs.append(LogLine(level, message))


def config() -> Optional[str]:
    return STATE.config


def _visible(kind: GroupVersionKind) -> None:
    if kind not in STATE.subscribed:
        raise NotSubscribed(kind)


def cache_get(kind: GroupVersionKind, namespace: Optional[str], name: str) -> Optional[str]:
    _visible(kind)
    return STATE.cache.get(kind, {}).get((namespace, name))


def cache_list(kind: GroupVersionKind, namespace: Optional[str], label_selector: Optional[str]) -> List[str]:
    requirements = parse_selector(label_selector or "")
    _visible(kind)
    found = []
    for (object_namespace, _), text in sorted(STATE.cache.get(kind, {}).items(), key=lambda item: (item[0][0] or "", item[0][1])):
        if namespace is not None and object_namespace != namespace:
            continue
        labels = ((json.loads(text).get("metadata") or {}).get("labels")) or {}
        if all(requirement(labels) for requirement in requirements):
            found.append(text)
    return found


_WORD = re.compile(r"^[A-Za-z0-9][-A-Za-z0-9_./]*$")


def _word(text: str) -> str:
    text = text.strip()
    if not _WORD.match(text):
        raise InvalidSelector(f"invalid label key or value {text!r}")
    return text


def _value_set(text: str) -> List[str]:
    text = text.strip()
    if not (text.startswith("(") and text.endswith(")")):
        raise InvalidSelector(f"expected a parenthesised set, got {text!r}")
    return [_word(value) for value in text[1:-1].split(",")]


def parse_selector(selector: str) -> List[Callable[[Dict[str, str]], bool]]:
    """The requirements of a Kubernetes label selector (``a=b``, ``a==b``,
    ``a!=b``, ``a in (x,y)``, ``a notin (x)``, ``a``, ``!a``, joined by
    commas), each a predicate over a label map. Raises InvalidSelector."""
    parts, depth, start = [], 0, 0
    for index, character in enumerate(selector):
        if character == "(":
            depth += 1
        elif character == ")":
            depth -= 1
            if depth < 0:
                raise InvalidSelector(f"unbalanced ')' in {selector!r}")
        elif character == "," and depth == 0:
            parts.append(selector[start:index])
            start = index + 1
    if depth != 0:
        raise InvalidSelector(f"unbalanced '(' in {selector!r}")
    parts.append(selector[start:])
    requirements = []
    for part in (part.strip() for part in parts):
        if not part:
            continue
        if "!=" in part:
            key, value = (_word(side) for side in part.split("!=", 1))
            requirements.append(lambda labels, k=key, v=value: labels.get(k) != v)
        elif "=" in part:
            key, _, value = part.replace("==", "=", 1).partition("=")
            key, value = _word(key), _word(value)
            requirements.append(lambda labels, k=key, v=value: labels.get(k) == v)
        elif " notin " in part:
            key, values = part.split(" notin ", 1)
            key, values = _word(key), _value_set(values)
            requirements.append(lambda labels, k=key, vs=values: labels.get(k) not in vs)
        elif " in " in part:
            key, values = part.split(" in ", 1)
            key, values = _word(key), _value_set(values)
            requirements.append(lambda labels, k=key, vs=values: labels.get(k) in vs)
        elif part.startswith("!"):
            key = _word(part[1:])
            requirements.append(lambda labels, k=key: k not in labels)
        else:
            key = _word(part)
            requirements.append(lambda labels, k=key: k in labels)
    return requirements
