"""The deadline of the call under way (the ``deadline`` interface of world
0.4.0). The host ends a call that passes its deadline (the instance is
rebuilt and the notification retried), and gives each Kubernetes or HTTP
request at most 80 % of what is left. A plugin reads it to skip or shorten
work that would not finish in time:

.. code-block:: python

    from herald_sdk import deadline

    for item in batch:
        if deadline.remaining_ms() < 100:
            workqueue.requeue_after(milliseconds=1)   # finish in the next call
            break
        handle(item)
"""

from __future__ import annotations

from herald_sdk import _host


def remaining_ms() -> int:
    """Milliseconds left before the deadline of the call under way (a
    handler call, or ``manifest``), rounded down; 0 once it has passed. In
    tests, :func:`herald_sdk.testing.set_remaining_ms` sets it."""
    return _host.remaining_ms()


__all__ = ["remaining_ms"]
