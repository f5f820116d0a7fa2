// Package metrics updates the metrics the manifest declared
// (herald.CounterMetric, GaugeMetric, HistogramMetric); the host exports
// them as `herald_plugin_<name>` with a `plugin` label.
//
//	metrics.Counter("alerts_total").Inc()
//	metrics.Counter("alerts_total").With("shop").Add(2)  // one value per declared label
//	metrics.Gauge("stuck").Set(3)
//	metrics.Histogram("rollout_seconds").ObserveDuration(d)
//
// Updates return nothing: the host drops, counts and logs (as a warning in
// the plugin's log) an update it cannot apply (undeclared name, wrong kind,
// wrong number of label values, negative counter increment, NaN, too many
// series).
package metrics

import (
	"time"

	"herald.dev/sdk/go/internal/host"
)

// CounterHandle updates a counter.
type CounterHandle struct {
	name   string
	labels []string
}

// Counter names a counter the manifest declared.
func Counter(name string) CounterHandle { return CounterHandle{name: name} }

// With selects the series with these label values, in declaration order.
func (c CounterHandle) With(labelValues ...string) CounterHandle {
	return CounterHandle{name: c.name, labels: labelValues}
}

// Inc adds 1.
func (c CounterHandle) Inc() { c.Add(1) }

// Add adds v (at least 0).
func (c CounterHandle) Add(v float64) { host.Get().MetricAdd(c.name, c.labels, v) }

// GaugeHandle updates a gauge.
type GaugeHandle struct {
	name   string
	labels []string
}

// Gauge names a gauge the manifest declared.
func Gauge(name string) GaugeHandle { return GaugeHandle{name: name} }

// With selects the series with these label values.
func (g GaugeHandle) With(labelValues ...string) GaugeHandle {
	return GaugeHandle{name: g.name, labels: labelValues}
}

// Set sets the gauge to v.
func (g GaugeHandle) Set(v float64) { host.Get().MetricSet(g.name, g.labels, v) }

// Add adds v (any sign).
func (g GaugeHandle) Add(v float64) { host.Get().MetricAdd(g.name, g.labels, v) }

// Inc adds 1.
func (g GaugeHandle) Inc() { g.Add(1) }

// Dec subtracts 1.
func (g GaugeHandle) Dec() { g.Add(-1) }

// HistogramHandle records observations.
type HistogramHandle struct {
	name   string
	labels []string
}

// Histogram names a histogram the manifest declared.
func Histogram(name string) HistogramHandle { return HistogramHandle{name: name} }

// With selects the series with these label values.
func (h HistogramHandle) With(labelValues ...string) HistogramHandle {
	return HistogramHandle{name: h.name, labels: labelValues}
}

// Observe records one observation.
func (h HistogramHandle) Observe(v float64) { host.Get().MetricObserve(h.name, h.labels, v) }

// ObserveDuration records d in seconds.
func (h HistogramHandle) ObserveDuration(d time.Duration) { h.Observe(d.Seconds()) }
