"""Metrics declared and updated, requeues and the deadline, against the
stand-in host; and the definitions the host would refuse."""

import math

import pytest

from herald_sdk import Manifest, Subscription, deadline, metrics, testing, workqueue
from herald_sdk.kinds import Pod, ReplicaSet
from herald_sdk.metrics import Metric, MetricKind
from herald_sdk.cache import Index

MANIFEST = (Manifest("m", "1").subscribe(Subscription.to(Pod))
            .metric(Metric.counter("alerts_total", "Alerts").labels("namespace"))
            .metric(Metric.gauge("stuck", "Stuck"))
            .metric(Metric.histogram("took_seconds", "Took").buckets(0.5, 2)))


def test_updates_are_summed_per_series():
    testing.declare(MANIFEST)
    metrics.counter("alerts_total").labels("shop").inc()
    metrics.counter("alerts_total").labels("shop").add(2)
    metrics.counter("alerts_total").labels("blog").inc()
    metrics.gauge("stuck").set(3)
    metrics.gauge("stuck").dec()
    metrics.gauge("stuck").add(0.5)
    metrics.histogram("took_seconds").observe(0.25)
    metrics.histogram("took_seconds").observe(4)
    assert testing.metric("alerts_total", "shop") == 3
    assert testing.metric("alerts_total", "blog") == 1
    assert testing.metric("stuck") == 2.5
    assert testing.observations("took_seconds") == [0.25, 4]
    assert testing.metrics() == {("alerts_total", ("shop",)): 3, ("alerts_total", ("blog",)): 1, ("stuck", ()): 2.5}
    updates = testing.take_metric_updates()
    assert [(u.op, u.name, u.label_values, u.value) for u in updates[:2]] == [
        ("add", "alerts_total", ("shop",), 1.0), ("add", "alerts_total", ("shop",), 2.0)]
    assert testing.metric_updates() == [] and testing.metric("alerts_total", "shop") == 3
    assert testing.take_messages() == []


def test_updates_the_host_would_drop_are_recorded_not_counted():
    testing.declare(MANIFEST)
    metrics.counter("alerts_total").inc()                        # no label value
    metrics.counter("alerts_total").labels("shop").add(-1)       # a counter going down
    metrics.gauge("stuck").labels("x").set(1)                    # a label the gauge does not have
    metrics.histogram("stuck").observe(1)                        # observe on a gauge
    metrics.counter("other_total").inc()                         # not defined
    metrics.gauge("stuck").set(math.nan)
    assert testing.metrics() == {}
    assert len(testing.metric_updates()) == 6
    assert testing.take_messages() == [
        "metric update dropped: metric alerts_total: 0 label values for 1 labels",
        "metric update dropped: metric alerts_total: a counter cannot go down (-1.0)",
        "metric update dropped: metric stuck: 1 label values for 0 labels",
        "metric update dropped: metric stuck: observe on a gauge",
        "metric update dropped: metric other_total is not defined in the manifest",
        "metric update dropped: metric stuck: NaN",
    ]


def test_without_declare_every_update_counts():
    metrics.counter("anything_total").labels("a", "b").inc()
    assert testing.metric("anything_total", "a", "b") == 1


@pytest.mark.parametrize("metric, problem", [
    (Metric.counter("alerts", "A"), "counter 'alerts' must end in _total"),
    (Metric.gauge("bad-name", "A"), "metric name 'bad-name' is not [a-zA-Z_][a-zA-Z0-9_]*"),
    (Metric.gauge("g", "A").labels("plugin"), "metric 'g': label name 'plugin' is reserved"),
    (Metric.histogram("h", "A").labels("le"), "metric 'h': label name 'le' is reserved"),
    (Metric.gauge("g", "A").labels("a", "a"), "metric 'g': label 'a' twice"),
    (Metric.histogram("h", "A").buckets(2, 1), "histogram 'h': buckets must be strictly increasing"),
])
def test_definitions_the_host_refuses(metric, problem):
    assert metric.problem() == problem
    manifest = Manifest("m", "1").subscribe(Subscription.to(Pod)).metric(metric)
    assert problem in manifest.problems()
    with pytest.raises(ValueError, match="the host would not load this plugin"):
        testing.declare(manifest)


def test_metric_builders_copy_and_describe():
    base = Metric.histogram("took_seconds", "Took")
    labelled = base.labels("namespace").buckets(1, 5)
    assert (base.label_names, base.bucket_bounds) == ((), ())
    assert (labelled.kind, labelled.label_names, labelled.bucket_bounds) == (MetricKind.HISTOGRAM, ("namespace",),
                                                                            (1.0, 5.0))
    twice = Manifest("m", "1").subscribe(Subscription.to(Pod)).metric(Metric.gauge("g", "G")).metric(
        Metric.gauge("g", "G"))
    assert "metric g is defined twice" in twice.problems()
    with pytest.raises(TypeError):
        Manifest("m", "1").metric("alerts_total")


def test_index_definitions_the_host_refuses():
    manifest = (Manifest("m", "1").subscribe(Subscription.to(Pod))
                .index(Index.by_owner("owner", ReplicaSet)).index(Index.by_label("app", Pod, "app"))
                .index(Index.by_label("app", Pod, "tier")))
    assert manifest.problems() == [
        "index 'owner' is of apps/v1/ReplicaSet, which it does not subscribe to",
        "index 'app' is declared twice",
    ]
    with pytest.raises(ValueError):
        Index("x", Pod, "label")
    with pytest.raises(ValueError):
        Index("x", Pod, "annotation", "a")


def test_requeues_are_recorded_in_seconds():
    workqueue.requeue_after(30)
    workqueue.requeue_after(milliseconds=1500)
    workqueue.requeue_after(seconds=1, milliseconds=1)
    assert testing.requeues() == [30.0, 1.5, 1.001]
    assert testing.take_requeues() == [30.0, 1.5, 1.001]
    assert testing.requeues() == []
    with pytest.raises(ValueError):
        workqueue.requeue_after(-1)


def test_the_deadline_is_what_the_test_sets():
    assert deadline.remaining_ms() == 1000
    testing.set_remaining_ms(20)
    assert deadline.remaining_ms() == 20
    testing.reset()
    assert deadline.remaining_ms() == 1000
