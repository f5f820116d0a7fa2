"""Logging into the host's log, tagged with the plugin's name.

.. code-block:: python

    from herald_sdk import log

    log.info("added", key=event.key, node=pod.node_name)   # "added key=shop/web-0 node=node-1"
    log.warn(f"{event.key} has no owner")

Keyword arguments are appended as ``key=value`` in the order given (values
with spaces, quotes or ``=`` are quoted), the ``logfmt`` style the
host's own lines use. ``print()`` also reaches the host log, as a line
of the plugin's stdout, but these functions carry a level.
"""

from __future__ import annotations

import enum
from typing import Any

from herald_sdk import _host


class Level(enum.IntEnum):
    """Severity of a log line; ordered, ``TRACE`` lowest."""

    #: Very detailed tracing.
    TRACE = 0
    #: Diagnostics for developers.
    DEBUG = 1
    #: Normal facts worth recording.
    INFO = 2
    #: Something looks wrong.
    WARN = 3
    #: Something failed.
    ERROR = 4

    def __str__(self) -> str:
        return self.name.lower()


def _field(value: Any) -> str:
    text = str(value)
    if text == "" or any(character in text for character in ' "=\t\n'):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    return text


def format_line(message: str, **fields: Any) -> str:
    """``message`` followed by `` key=value`` for each field, as the logging functions write it."""
    if not fields:
        return message
    return " ".join([message] + [f"{key}={_field(value)}" for key, value in fields.items()])


def write(level: Level, message: str, **fields: Any) -> None:
    """Writes one line to the host's log at ``level``. The host may
    rate-limit a plugin that floods."""
    _host.log(Level(level), format_line(message, **fields))


def trace(message: str, **fields: Any) -> None:
    """Logs a line at :attr:`Level.TRACE`."""
    write(Level.TRACE, message, **fields)


def debug(message: str, **fields: Any) -> None:
    """Logs a line at :attr:`Level.DEBUG`."""
    write(Level.DEBUG, message, **fields)


def info(message: str, **fields: Any) -> None:
    """Logs a line at :attr:`Level.INFO`."""
    write(Level.INFO, message, **fields)


def warn(message: str, **fields: Any) -> None:
    """Logs a line at :attr:`Level.WARN`."""
    write(Level.WARN, message, **fields)


def error(message: str, **fields: Any) -> None:
    """Logs a line at :attr:`Level.ERROR`."""
    write(Level.ERROR, message, **fields)
