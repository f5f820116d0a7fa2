"""Write Herald plugins in Python.

A Herald plugin is a WebAssembly component that the Herald daemon loads and
feeds with the notifications of Kubernetes shared informers: every add,
update and delete of the objects it subscribed to. This package turns the
ABI (``wit/0.2.0/herald.wit``, world ``herald:plugin/plugin@0.2.0``) into one base
class, :class:`Handler`, plus objects as dicts, logging, cache look-ups,
configuration, Kubernetes API calls and Events; ``python -m herald_sdk build app.py -o plugin.wasm`` compiles
a module into a component with componentize-py.

.. code-block:: python

    import herald_sdk
    from herald_sdk import Handler, Manifest, Subscription, log
    from herald_sdk.kinds import Pod

    class PodLogger(Handler):
        @classmethod
        def manifest(cls):
            return Manifest("pod-logger", "0.1.0").subscribe(
                Subscription.to(Pod).namespace("shop").label_selector("app=web"))

        def on_add(self, event):
            log.info("added", pod=event.key, node=event.object.node_name)

    herald_sdk.export_plugin(PodLogger)

Modules: :mod:`herald_sdk.log`, :mod:`herald_sdk.cache`,
:mod:`herald_sdk.config`, :mod:`herald_sdk.kube` (reads and writes through
the API server), :mod:`herald_sdk.events` (Kubernetes Events),
:mod:`herald_sdk.kinds` (typed views) and :mod:`herald_sdk.testing` (the
stand-in host for pytest).
"""

from herald_sdk import cache, config, events, kinds, kube, log
from herald_sdk.errors import CacheError, HandlerError, InvalidSelector, KubeError, NotSubscribed
from herald_sdk.event import Context, Event, Update
from herald_sdk.handler import Handler, export_plugin
from herald_sdk.kinds import GroupVersionKind, KubeObject
from herald_sdk.manifest import EVENTS, Delivery, Limits, Manifest, Subscription, Verb, WriteRule

#: The SDK's version.
__version__ = "0.2.0"
#: The WIT package this SDK targets.
WIT_PACKAGE = "herald:plugin@0.2.0"

__all__ = [
    "cache", "config", "events", "kinds", "kube", "log", "CacheError", "HandlerError",
    "InvalidSelector", "KubeError", "NotSubscribed", "Context", "Event", "Update", "Handler",
    "export_plugin", "GroupVersionKind", "KubeObject", "Delivery", "Limits", "Manifest",
    "Subscription", "Verb", "WriteRule", "EVENTS",
]
