"""Which cluster (the ``cluster`` interface of world 0.6.0). A daemon may
watch several clusters, and the operator says which ones a plugin runs on
(``plugins.<name>.clusters``). Every notification comes from one cluster;
during its call, cache look-ups, :mod:`herald_sdk.kube` calls and
:mod:`herald_sdk.events` go to that cluster, so a plugin that only reacts
where things happen needs nothing from this module. One that acts across
clusters reads :func:`current` and :func:`names`, and runs part of a call
against another of its clusters with :func:`within`:

.. code-block:: python

    from herald_sdk import cluster, kube
    from herald_sdk.kinds import ConfigMap

    def on_add(self, event):
        origin = cluster.current()
        for other in cluster.names():
            if other != origin:
                with cluster.within(other):
                    kube.Api(ConfigMap, namespace="shop").apply("settings", copy, force=True)

Each look-up, call and Event is still checked against the plugin's grants
for the cluster it reaches.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, List

from herald_sdk import _host
from herald_sdk.errors import HandlerError


def current() -> str:
    """The cluster of the call under way (a DNS label such as ``west``; the
    default cluster's configured name, ``default`` unless the operator names
    it): the notification's, or the one :func:`within` runs against. In
    tests, :func:`herald_sdk.testing.set_cluster` sets it."""
    return _host.cluster_current()


def names() -> List[str]:
    """The clusters this plugin is delivered notifications from, sorted."""
    return _host.cluster_names()


@contextmanager
def within(name: str) -> Iterator[None]:
    """Runs the ``with`` block with ``name`` as the cluster of its look-ups,
    calls and Events, then goes back to the call's cluster (also when the
    block raises). ``name`` must be one of :func:`names`: another raises
    :class:`HandlerError` before the block runs."""
    refused = _host.cluster_target(name)
    if refused is not None:
        raise HandlerError(refused)
    try:
        yield
    finally:
        _host.cluster_target(None)


__all__ = ["current", "names", "within"]
