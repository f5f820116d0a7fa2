// Command {{name}} is a Herald plugin in Go that logs Pods being added,
// changing phase and being deleted.
package main

import (
	"log/slog"

	corev1 "k8s.io/api/core/v1"

	herald "herald.dev/sdk/go"
)

// Plugin logs the life of every Pod. Its fields, if it had any, would live
// as long as the plugin's instance.
type Plugin struct {
	herald.Base // handlers not written here do nothing
}

// Manifest names the plugin and what it subscribes to.
func (p *Plugin) Manifest() *herald.Manifest {
	return herald.NewManifest("{{name}}", "0.1.0").
		Subscribe(herald.SubscriptionTo[corev1.Pod]())
}

// phase is a Pod's status.phase, or "none" before the API server sets one.
func phase(pod *corev1.Pod) string {
	if pod.Status.Phase == "" {
		return "none"
	}
	return string(pod.Status.Phase)
}

// OnAdd logs a Pod seen for the first time ("listed" during the initial list).
func (p *Plugin) OnAdd(e *herald.Event) error {
	pod, err := herald.Decode[corev1.Pod](e)
	if err != nil {
		return err
	}
	verb := "added"
	if e.IsInitialList {
		verb = "listed"
	}
	slog.Info(verb, "pod", e.Key, "phase", phase(pod))
	return nil
}

// OnUpdate logs a change of phase.
func (p *Plugin) OnUpdate(u *herald.Update) error {
	before, after, err := herald.DecodeUpdate[corev1.Pod](u)
	if err != nil {
		return err
	}
	if phase(before) != phase(after) {
		slog.Info("phase", "pod", u.Key, "from", phase(before), "to", phase(after))
	}
	return nil
}

// OnDelete logs a deletion.
func (p *Plugin) OnDelete(e *herald.Event) error {
	slog.Info("deleted", "pod", e.Key)
	return nil
}

func init() { herald.Register(&Plugin{}) }

// main is not called: the component's exports call the handler.
func main() {}
