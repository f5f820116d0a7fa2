"""Where the SDK's host calls go: the real host's imports inside the
component (``sys.platform == "wasi"``), the in-process stand-in of
:mod:`herald_sdk.testing` everywhere else. Not a public API."""

from __future__ import annotations

import sys

if sys.platform == "wasi":  # inside the component built by componentize-py
    from herald_sdk._wasm_host import (cache_get, cache_list, cluster_current, cluster_names, cluster_target,
                                       config, events_publish, http_send, index_lookup, kube_apply, kube_create,
                                       kube_delete, kube_get, kube_patch, kube_replace, log, metrics_update,
                                       remaining_ms, requeue_after)
else:
    from herald_sdk._fake_host import (cache_get, cache_list, cluster_current, cluster_names, cluster_target,
                                       config, events_publish, http_send, index_lookup, kube_apply, kube_create,
                                       kube_delete, kube_get, kube_patch, kube_replace, log, metrics_update,
                                       remaining_ms, requeue_after)

__all__ = ["cache_get", "cache_list", "config", "log", "kube_get", "kube_create", "kube_replace",
           "kube_patch", "kube_apply", "kube_delete", "events_publish", "index_lookup", "metrics_update",
           "requeue_after", "remaining_ms", "http_send", "cluster_current", "cluster_names", "cluster_target"]
