"""The plugin's own Prometheus metrics: declared in the manifest with
:class:`Metric`, updated from handlers with :func:`counter`, :func:`gauge`
and :func:`histogram`. The host exports each as ``herald_plugin_<name>`` on
its ``/metrics`` endpoint, with a ``plugin`` label naming the plugin.

.. code-block:: python

    from herald_sdk import Manifest, Subscription, metrics
    from herald_sdk.metrics import Metric

    manifest = (Manifest("crash-watch", "0.1.0")
                .subscribe(Subscription.to(Pod))
                .metric(Metric.counter("alerts_total", "Alerts sent").labels("namespace"))
                .metric(Metric.gauge("stuck", "Pods stuck right now"))
                .metric(Metric.histogram("rollout_seconds", "Rollout durations").buckets(10, 60, 300)))

    # In a handler:
    metrics.counter("alerts_total").labels("shop").inc()
    metrics.gauge("stuck").set(3)
    metrics.histogram("rollout_seconds").observe(12.5)

Updates return nothing: the host drops an update it cannot apply (a name
the manifest did not define, the wrong kind for the metric, the wrong number
of label values, a negative counter increment, NaN), counts it and logs a
warning in the plugin's log. A metric never fails a handler. Each plugin
holds a bounded number of series (label value combinations, 1,000 by
default): keep label values few (a namespace, a reason, never a Pod name).

``labels`` gives the label *names* on a :class:`Metric` and the label
*values* on an update, as ``prometheus_client`` does (the Rust SDK's
``.with(&[..])``; ``with`` is a Python keyword).
"""

from __future__ import annotations

import copy
import enum
import math
import re
from typing import Optional, Tuple

from herald_sdk import _host

_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


class MetricKind(enum.Enum):
    """What a metric measures (Prometheus' metric types)."""

    #: A count that only goes up: :meth:`Counter.inc`, :meth:`Counter.add`.
    COUNTER = "counter"
    #: A value that goes up and down: :meth:`Gauge.set`, :meth:`Gauge.add`.
    GAUGE = "gauge"
    #: Observations counted into buckets: :meth:`Histogram.observe`.
    HISTOGRAM = "histogram"


class Metric:
    """One metric the plugin will update, declared with
    :meth:`herald_sdk.Manifest.metric`. Start from :meth:`counter`,
    :meth:`gauge` or :meth:`histogram`; :meth:`labels` and :meth:`buckets`
    return changed copies.

    The host refuses to load a plugin whose definitions break Prometheus'
    naming rules (:meth:`problem` says which): names and label names
    ``[a-zA-Z_][a-zA-Z0-9_]*``, counters ending in ``_total``, no label named
    ``plugin`` (nor ``le`` on histograms), bucket bounds strictly increasing.
    """

    def __init__(self, kind: MetricKind, name: str, help: str) -> None:
        #: Counter, gauge or histogram.
        self.kind = MetricKind(kind)
        #: The name, without the ``herald_plugin_`` prefix the host adds.
        self.name = name
        #: One line saying what it measures (the ``# HELP`` text).
        self.help = help
        #: The names of its labels; every update gives one value for each, in this order.
        self.label_names: Tuple[str, ...] = ()
        #: A histogram's bucket upper bounds; empty for Prometheus' defaults (5 ms to 10 s).
        self.bucket_bounds: Tuple[float, ...] = ()

    @classmethod
    def counter(cls, name: str, help: str) -> "Metric":
        """A counter; its name must end in ``_total``."""
        return cls(MetricKind.COUNTER, name, help)

    @classmethod
    def gauge(cls, name: str, help: str) -> "Metric":
        """A gauge."""
        return cls(MetricKind.GAUGE, name, help)

    @classmethod
    def histogram(cls, name: str, help: str) -> "Metric":
        """A histogram, with Prometheus' default buckets until :meth:`buckets` sets others."""
        return cls(MetricKind.HISTOGRAM, name, help)

    def labels(self, *names: str) -> "Metric":
        """Adds label names; updates then give one value for each, in order."""
        changed = copy.copy(self)
        changed.label_names = self.label_names + tuple(names)
        return changed

    def buckets(self, *bounds: float) -> "Metric":
        """Sets a histogram's bucket upper bounds (strictly increasing; ``+Inf`` is implied)."""
        changed = copy.copy(self)
        changed.bucket_bounds = tuple(float(bound) for bound in bounds)
        return changed

    def problem(self) -> Optional[str]:
        """What the host would refuse this definition for, or ``None``."""
        name = self.name
        if not isinstance(name, str) or not _NAME.match(name):
            return f"metric name {name!r} is not [a-zA-Z_][a-zA-Z0-9_]*"
        if self.kind is MetricKind.COUNTER and not name.endswith("_total"):
            return f"counter {name!r} must end in _total"
        for index, label in enumerate(self.label_names):
            if not isinstance(label, str) or not _NAME.match(label):
                return f"metric {name!r}: label name {label!r} is not [a-zA-Z_][a-zA-Z0-9_]*"
            if label == "plugin" or (self.kind is MetricKind.HISTOGRAM and label == "le"):
                return f"metric {name!r}: label name {label!r} is reserved"
            if label in self.label_names[:index]:
                return f"metric {name!r}: label {label!r} twice"
        bounds = self.bucket_bounds
        if self.kind is MetricKind.HISTOGRAM and (
                any(math.isnan(bound) for bound in bounds)
                or any(low >= high for low, high in zip(bounds, bounds[1:]))):
            return f"histogram {name!r}: buckets must be strictly increasing"
        return None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Metric) and vars(self) == vars(other)

    def __repr__(self) -> str:
        return (f"Metric({self.kind.value}, {self.name!r}, labels={list(self.label_names)!r}, "
                f"buckets={list(self.bucket_bounds)!r})")


class _Series:
    """A metric named for updates, optionally with its label values."""

    def __init__(self, name: str, label_values: Tuple[str, ...] = ()) -> None:
        self._name = name
        self._label_values = label_values

    def labels(self, *values: str) -> "_Series":
        """The series with these label values, one per declared label name, in order."""
        return type(self)(self._name, tuple(str(value) for value in values))

    def _update(self, op: str, value: float) -> None:
        _host.metrics_update(op, self._name, list(self._label_values), float(value))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._name!r}, {list(self._label_values)!r})"


class Counter(_Series):
    """Updates of a counter: only up."""

    def inc(self) -> None:
        """Adds 1."""
        self._update("add", 1.0)

    def add(self, value: float) -> None:
        """Adds ``value`` (at least 0)."""
        self._update("add", value)


class Gauge(_Series):
    """Updates of a gauge: set, up or down."""

    def set(self, value: float) -> None:
        """Sets the gauge to ``value``."""
        self._update("set", value)

    def add(self, value: float) -> None:
        """Adds ``value`` (any sign)."""
        self._update("add", value)

    def inc(self) -> None:
        """Adds 1."""
        self._update("add", 1.0)

    def dec(self) -> None:
        """Subtracts 1."""
        self._update("add", -1.0)


class Histogram(_Series):
    """Updates of a histogram: observations."""

    def observe(self, value: float) -> None:
        """Records one observation (seconds, for a ``_seconds`` histogram)."""
        self._update("observe", value)


def counter(name: str) -> Counter:
    """The counter ``name`` declared in the manifest, for updates."""
    return Counter(name)


def gauge(name: str) -> Gauge:
    """The gauge ``name`` declared in the manifest, for updates."""
    return Gauge(name)


def histogram(name: str) -> Histogram:
    """The histogram ``name`` declared in the manifest, for updates."""
    return Histogram(name)


__all__ = ["MetricKind", "Metric", "Counter", "Gauge", "Histogram", "counter", "gauge", "histogram"]
