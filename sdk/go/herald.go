// Package herald writes Herald plugins in Go, with the standard Go
// toolchain.
//
// A Herald plugin is a WebAssembly component that the Herald daemon loads
// and feeds with the notifications of Kubernetes shared informers. A Go
// plugin is a main package that registers a Handler:
//
//	type PodLogger struct {
//		herald.Base // OnAdd, OnUpdate and OnDelete default to doing nothing
//		seen int
//	}
//
//	func (p *PodLogger) Manifest() *herald.Manifest {
//		return herald.NewManifest("pod-logger", "0.1.0").
//			Subscribe(herald.SubscriptionTo[corev1.Pod]().InNamespace("shop"))
//	}
//
//	func (p *PodLogger) OnAdd(e *herald.Event) error {
//		p.seen++
//		pod, err := herald.Decode[corev1.Pod](e)
//		if err != nil {
//			return err
//		}
//		slog.Info("added", "pod", e.Key, "node", pod.Spec.NodeName, "seen", p.seen)
//		return nil
//	}
//
//	func init() { herald.Register(&PodLogger{}) }
//
//	func main() {}
//
// It builds with `GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared`
// into a core module that `herald plugin build` (or sdk/go/build.sh) turns
// into a component; see the SDK's README. Natively the same package builds
// and `go test` runs its handlers against the stand-in host of package
// heraldtest.
//
// The pieces: Manifest, Subscription, WriteRule, Metric and Index say what
// the plugin watches and needs; Event, Update and ObjectView carry the
// objects (typed with encoding/json into k8s.io/api types, or lazily);
// log/slog writes to the host's log; packages cache, config, kube, events,
// metrics, workqueue and wasihttp reach the host's capabilities. A plugin
// that decides on writes at admission declares a Webhook
// (Manifest.Validating, Manifest.Mutating) and implements Validator or
// Mutator, answering each AdmissionReview with a Verdict or a Mutation.
//
// The host delivers notifications as world 0.7.0's frames, read in place
// (an Event's strings share the frame's memory); a plugin that wants
// batches of them, or updates without the old state, implements
// DeliveryConfigurer.
package herald

import (
	"fmt"

	// Before any other package's init: see its documentation.
	_ "herald.dev/sdk/go/internal/argv0"
)

// Handler is a Herald plugin: a manifest plus what to do with each
// notification. The registered value lives as long as the plugin instance,
// so its fields carry state from call to call (the host discards the
// instance, and the state, on reload or after a trap). Calls never overlap.
//
// A returned error is a handler failure that the host records and retries
// with backoff a bounded number of times. A panic traps the instance: the
// host records it and starts a fresh instance for the next call. (At
// admission, Validator and Mutator, both are faults that the webhook's
// failure policy answers.)
type Handler interface {
	// Manifest describes the plugin: called when it is loaded, before any
	// handler call, for the manifest and again for its webhooks (keep it
	// free of side effects). config.Get already works here.
	Manifest() *Manifest
	// OnAdd: an object was first seen, or replayed to a plugin joining an
	// informer that had synced (IsInitialList).
	OnAdd(event *Event) error
	// OnUpdate: an object changed; on a resync (IsResync) old and new are
	// the same state.
	OnUpdate(update *Update) error
	// OnDelete: an object was deleted; the event carries its last known
	// state (FinalStateUnknown when the deletion was inferred).
	OnDelete(event *Event) error
}

// Base gives a Handler OnAdd, OnUpdate and OnDelete that do nothing; embed
// it and write the ones the plugin needs.
type Base struct{}

// OnAdd does nothing.
func (Base) OnAdd(*Event) error { return nil }

// OnUpdate does nothing.
func (Base) OnUpdate(*Update) error { return nil }

// OnDelete does nothing.
func (Base) OnDelete(*Event) error { return nil }

var registered Handler

// Register makes h the plugin's handler. Call it once, from an init
// function of the main package: under GOOS=wasip1 the host calls the
// component's exports right after the Go runtime (and every init) has run.
func Register(h Handler) {
	if registered != nil {
		panic(fmt.Sprintf("herald: a handler is already registered (%T)", registered))
	}
	registered = h
}

// Registered returns the handler passed to Register, or nil.
func Registered() Handler { return registered }
