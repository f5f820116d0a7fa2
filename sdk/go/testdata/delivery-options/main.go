// Command delivery-options is the Go SDK's delivery fixture: a plugin whose
// DeliveryOptions skip the old state and take batches (world 0.7.0's
// `delivery.options`), so that host/tests/cli/sdk_go.rs can build it with
// `herald plugin build` and see, through the real ABI in replay, that the
// host honours what the options record says: its updates come without
// their old state, and Old says why.
package main

import (
	"log/slog"

	herald "herald.dev/sdk/go"
)

// Lean logs what each update carries.
type Lean struct {
	herald.Base
}

// Manifest subscribes to ConfigMaps (by name: no k8s.io/api, a small
// build).
func (l *Lean) Manifest() *herald.Manifest {
	return herald.NewManifest("go-delivery-options", "0.1.0").
		SubscribeKind("", "v1", "ConfigMap")
}

// DeliveryOptions asks for updates without their old state, up to 16
// notifications per call.
func (l *Lean) DeliveryOptions() herald.DeliveryOptions {
	return herald.DeliveryOptions{SkipOldState: true, MaxBatch: 16}
}

// OnAdd logs the key.
func (l *Lean) OnAdd(e *herald.Event) error {
	slog.Info("added", "key", e.Key, "bytes", len(e.JSON))
	return nil
}

// OnUpdate logs the key, the size of each state and what Old says.
func (l *Lean) OnUpdate(u *herald.Update) error {
	var old map[string]any
	slog.Info("updated", "key", u.Key, "old", len(u.OldJSON), "new", len(u.NewJSON), "err", u.Old(&old))
	return nil
}

func init() { herald.Register(&Lean{}) }

func main() {}
