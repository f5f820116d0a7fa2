"""The plugin's work queue, with client-go's semantics: ask for the object
being handled to be delivered again later, for a level-triggered re-check.

.. code-block:: python

    from herald_sdk import workqueue

    def on_add(self, event):
        # Nothing may change before the deadline passes: look again then.
        workqueue.requeue_after(600)

With coalesced delivery (``Subscription.coalesced()``) a failed call does not
hold up other objects: the host retries that object alone, with a delay
doubling from 5 ms to 1,000 s per consecutive failure, and a newer change to
it is delivered once, at once, with the newest state. With every-event
delivery failures are retried in order, blocking the subscription.
"""

from __future__ import annotations

from herald_sdk import _host

_U64_MAX = (1 << 64) - 1


def requeue_after(seconds: float = 0, milliseconds: int = 0) -> None:
    """Asks for the object of the call under way to be delivered again after
    ``seconds`` plus ``milliseconds`` (millisecond precision, saturating),
    once the call returns without raising.

    - **The last request of a call wins.**
    - A newer change to the object delivered before then takes its place.
    - A call that raises is retried with the host's backoff instead; the
      request is dropped.
    - **Honoured for coalesced subscriptions** only; for every-event ones the
      host ignores it with a warning in the plugin's log.

    The re-delivery is an update whose old and new states are the cached object.
    """
    delay = int(seconds * 1000) + int(milliseconds)
    if delay < 0:
        raise ValueError(f"requeue_after: the delay must not be negative, got {delay} ms")
    _host.requeue_after(min(delay, _U64_MAX))


__all__ = ["requeue_after"]
