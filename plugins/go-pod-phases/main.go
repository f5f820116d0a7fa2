// Command go-pod-phases is a Herald plugin in Go: it follows Pods, logs
// their phase changes, counts container restarts and phase changes as
// metrics, publishes a Warning Event when a container keeps restarting,
// and re-checks Pods stuck in Pending.
//
// Test it with `go test ./...`; build it into a component with `herald
// plugin build` (see README.md).
package main

import (
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"

	herald "herald.dev/sdk/go"
	"herald.dev/sdk/go/config"
	"herald.dev/sdk/go/deadline"
	"herald.dev/sdk/go/events"
	"herald.dev/sdk/go/metrics"
	"herald.dev/sdk/go/workqueue"
)

// Settings are the operator's configuration (the plugin's `config`).
type Settings struct {
	// RestartWarning is the restart count at which a container gets a
	// Warning Event.
	RestartWarning int32 `json:"restartWarning"`
	// PendingRecheck is how long after a Pod was seen Pending it is looked
	// at again, as a Go duration ("30s"); "0s" turns it off.
	PendingRecheck string `json:"pendingRecheck"`
}

// eventTime is the least a call must have left to publish an Event: less,
// and the call fails so that the host retries it (with the same old and
// new Pod) rather than cutting the Event's request short.
const eventTime = 100 * time.Millisecond

// PodPhases is the plugin; its fields live as long as the instance.
type PodPhases struct {
	herald.Base
	settings   Settings
	recheck    time.Duration
	configured bool
	seen       int
}

func (p *PodPhases) Manifest() *herald.Manifest {
	return herald.NewManifest("go-pod-phases", "0.1.0").
		Subscribe(herald.SubscriptionTo[corev1.Pod]().Coalesced()).
		Capability("events").
		Metric(herald.CounterMetric("container_restarts_total", "Container restarts seen").Labels("namespace")).
		Metric(herald.CounterMetric("phase_changes_total", "Pod phase changes seen").Labels("phase")).
		Metric(herald.GaugeMetric("pods_seen", "Pods added since the instance started"))
}

// configure reads the settings once (they do not change within an
// instance: a new configuration reloads the plugin).
func (p *PodPhases) configure() error {
	if p.configured {
		return nil
	}
	settings := Settings{RestartWarning: 3, PendingRecheck: "30s"}
	if _, err := config.Get(&settings); err != nil {
		return err
	}
	d, err := time.ParseDuration(settings.PendingRecheck)
	if err != nil {
		return fmt.Errorf("pendingRecheck: %w", err)
	}
	p.settings, p.recheck, p.configured = settings, d, true
	return nil
}

func (p *PodPhases) OnAdd(e *herald.Event) error {
	if err := p.configure(); err != nil {
		return err
	}
	p.seen++
	metrics.Gauge("pods_seen").Set(float64(p.seen))
	// The whole Pod, typed, decoded with encoding/json.
	pod, err := herald.Decode[corev1.Pod](e)
	if err != nil {
		return err
	}
	slog.Info("pod added", "pod", e.Key, "phase", pod.Status.Phase, "node", pod.Spec.NodeName, "initial", e.IsInitialList)
	if pod.Status.Phase == corev1.PodPending && p.recheck > 0 {
		workqueue.RequeueAfter(p.recheck)
	}
	return nil
}

func (p *PodPhases) OnUpdate(u *herald.Update) error {
	if err := p.configure(); err != nil {
		return err
	}
	// The hot path: the lazy view decodes the metadata and, below, only
	// the status; the spec (most of a Pod) is scanned but never built.
	oldView, err := u.OldView()
	if err != nil {
		return err
	}
	newView, err := u.NewView()
	if err != nil {
		return err
	}
	var oldStatus, newStatus corev1.PodStatus
	if _, err := oldView.Status(&oldStatus); err != nil {
		return err
	}
	if _, err := newView.Status(&newStatus); err != nil {
		return err
	}
	before := map[string]int32{}
	for _, c := range oldStatus.ContainerStatuses {
		before[c.Name] = c.RestartCount
	}
	var warnings []corev1.ContainerStatus
	for _, c := range newStatus.ContainerStatuses {
		if before[c.Name] < p.settings.RestartWarning && c.RestartCount >= p.settings.RestartWarning {
			warnings = append(warnings, c)
		}
	}
	// Before anything is logged or counted: a call that fails is retried
	// whole, with the same old and new Pod.
	if len(warnings) > 0 {
		if left := deadline.Remaining(); left < eventTime {
			return fmt.Errorf("%v left of the call, too little to publish an Event: retry", left)
		}
	}
	if oldStatus.Phase != newStatus.Phase {
		slog.Info("phase changed", "pod", u.Key, "from", oldStatus.Phase, "to", newStatus.Phase)
		metrics.Counter("phase_changes_total").With(string(newStatus.Phase)).Inc()
	}
	for _, c := range newStatus.ContainerStatuses {
		if delta := c.RestartCount - before[c.Name]; delta > 0 {
			metrics.Counter("container_restarts_total").With(newView.Metadata.Namespace).Add(float64(delta))
		}
	}
	for _, c := range warnings {
		note := fmt.Sprintf("container %s restarted %d times", c.Name, c.RestartCount)
		if err := events.New(newView, events.TypeWarning, "RestartingContainer", note).Action("Observe").Publish(); err != nil {
			return err // the host retries the call
		}
	}
	if newStatus.Phase == corev1.PodPending && p.recheck > 0 {
		workqueue.RequeueAfter(p.recheck)
	}
	return nil
}

func (p *PodPhases) OnDelete(e *herald.Event) error {
	slog.Info("pod deleted", "pod", e.Key, "final-state-unknown", e.FinalStateUnknown)
	return nil
}

func init() { herald.Register(&PodPhases{}) }

// main is not called: the component's exports call the handler.
func main() {}
