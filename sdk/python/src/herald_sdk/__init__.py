"""Write Herald plugins in Python.

A Herald plugin is a WebAssembly component that the Herald daemon loads and
feeds with the notifications of Kubernetes shared informers: every add,
update and delete of the objects it subscribed to; it may also decide on
writes at admission, before they reach the cluster. This package turns the
ABI (``wit/0.7.0/herald.wit``, world ``herald:plugin/plugin@0.7.0``) into one
base class, :class:`Handler`, plus objects as dicts, logging, cache and index
look-ups, configuration, Kubernetes API calls and Events, metrics of the
plugin's own, the work queue, the call's deadline and cluster, outbound HTTP
and admission decisions;
``python -m herald_sdk build app.py -o plugin.wasm`` compiles a module into a
component with componentize-py.

.. code-block:: python

    import herald_sdk
    from herald_sdk import Handler, Manifest, Subscription, log
    from herald_sdk.kinds import Pod

    class PodLogger(Handler):
        @classmethod
        def manifest(cls):
            return Manifest("pod-logger", "0.1.0").subscribe(
                Subscription.to(Pod).namespace("shop").labels("app=web"))

        def on_add(self, event):
            log.info("added", pod=event.key, node=event.object.node_name)

    herald_sdk.export_plugin(PodLogger)

Modules: :mod:`herald_sdk.admission` (validating and mutating writes),
:mod:`herald_sdk.log`, :mod:`herald_sdk.cache` (and indexes),
:mod:`herald_sdk.config`, :mod:`herald_sdk.kube` (reads and writes through
the API server), :mod:`herald_sdk.events` (Kubernetes Events),
:mod:`herald_sdk.metrics`, :mod:`herald_sdk.workqueue`,
:mod:`herald_sdk.deadline`, :mod:`herald_sdk.cluster` (which cluster, on a
daemon watching several), :mod:`herald_sdk.http` (outbound HTTP; the
standard ``urllib.request`` works too), :mod:`herald_sdk.kinds` (typed
views) and :mod:`herald_sdk.testing` (the stand-in host for pytest).
"""

from herald_sdk import (admission, cache, cluster, config, deadline, events, http, kinds, kube, log, metrics,
                        workqueue)
from herald_sdk.admission import AdmissionReview, AdmissionRule, FailurePolicy, Mutation, Operation, Verdict, Webhook
from herald_sdk.cache import Index
from herald_sdk.errors import CacheError, HandlerError, InvalidSelector, KubeError, NotSubscribed, UnknownIndex
from herald_sdk.event import Context, Event, Update
from herald_sdk.handler import Handler, export_plugin
from herald_sdk.http import HttpError
from herald_sdk.kinds import GroupVersionKind, KubeObject
from herald_sdk.manifest import EVENTS, HTTP, Delivery, Limits, Manifest, Subscription, Verb, WriteRule
from herald_sdk.metrics import Metric

#: The SDK's version.
__version__ = "0.7.0"
#: The WIT package this SDK targets.
WIT_PACKAGE = "herald:plugin@0.7.0"

__all__ = [
    "admission", "cache", "cluster", "config", "deadline", "events", "http", "kinds", "kube", "log", "metrics", "workqueue",
    "CacheError", "HandlerError", "HttpError", "InvalidSelector", "KubeError", "NotSubscribed", "UnknownIndex",
    "Context", "Event", "Update", "Handler", "export_plugin", "GroupVersionKind", "KubeObject", "Delivery",
    "Index", "Limits", "Manifest", "Metric", "Subscription", "Verb", "WriteRule", "EVENTS", "HTTP",
    "AdmissionReview", "AdmissionRule", "FailurePolicy", "Mutation", "Operation", "Verdict", "Webhook",
]
