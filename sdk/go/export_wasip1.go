//go:build wasip1

package herald

import (
	"time"

	"herald.dev/sdk/go/internal/cabi"
	types2 "herald.dev/sdk/go/internal/wit/herald/plugin/v0.2.0/types"
	types3 "herald.dev/sdk/go/internal/wit/herald/plugin/v0.3.0/types"
	delivery "herald.dev/sdk/go/internal/wit/herald/plugin/v0.7.0/delivery"
	world "herald.dev/sdk/go/internal/wit/world"
)

// The component's exports call the registered handler: the manifest, the
// delivery options it asks for (DeliveryConfigurer), and each frame's
// notifications, read in place from the frame (deliver, frame.go).
func init() {
	world.ExportManifest = func() types3.Manifest { return must().Manifest().toWIT() }
	delivery.ExportOptions = func() delivery.DeliveryOptions {
		oldState, maxBatch := deliveryOptions(must())
		return delivery.DeliveryOptions{OldState: oldState, MaxBatch: maxBatch}
	}
	delivery.ExportDeliver = func(frame []byte) cabi.Result[struct{}, delivery.Failure] {
		if f := deliver(must(), frame); f != nil {
			return cabi.Err[struct{}](delivery.Failure{Index: f.index, Message: f.message})
		}
		return cabi.OK[struct{}, delivery.Failure](struct{}{})
	}
}

func must() Handler {
	if registered == nil {
		panic("herald: no handler registered: call herald.Register from an init function of the main package")
	}
	return registered
}

func gvkWIT(k GroupVersionKind) types2.GroupVersionKind {
	return types2.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
}

func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (m *Manifest) toWIT() types3.Manifest {
	out := types3.Manifest{
		Name:         m.Name,
		Version:      m.Version,
		Capabilities: append([]string{}, m.Capabilities...),
	}
	for _, s := range m.Subscriptions {
		sub := types2.Subscription{
			Kind:          gvkWIT(s.Kind),
			Namespace:     opt(s.Namespace),
			LabelSelector: opt(s.LabelSelector),
			FieldSelector: opt(s.FieldSelector),
			Delivery:      types2.DeliveryMode(s.Delivery),
		}
		if s.Resync > 0 {
			ms := uint64(s.Resync / time.Millisecond)
			sub.ResyncPeriodMs = &ms
		}
		out.Subscriptions = append(out.Subscriptions, sub)
	}
	if d := m.Limits.CallDeadline; d > 0 {
		ms := uint32(d / time.Millisecond)
		out.Limits.CallDeadlineMs = &ms
	}
	if b := m.Limits.MemoryBytes; b > 0 {
		out.Limits.MemoryBytes = &b
	}
	for _, w := range m.Writes {
		rule := types2.WriteRule{Group: w.Group, Kind: w.Kind, Subresource: opt(w.Subresource), Namespaces: append([]string{}, w.Namespaces...)}
		for _, v := range w.Verbs {
			rule.Verbs = append(rule.Verbs, types2.Verb(v))
		}
		out.Writes = append(out.Writes, rule)
	}
	for _, mt := range m.Metrics {
		out.Metrics = append(out.Metrics, types3.MetricDefinition{
			Name:       mt.Name,
			Help:       mt.Help,
			Kind:       types3.MetricKind(mt.Kind),
			LabelNames: append([]string{}, mt.LabelNames...),
			Buckets:    append([]float64{}, mt.Buckets...),
		})
	}
	for _, ix := range m.Indexes {
		def := types3.IndexDefinition{Name: ix.Name, Kind: gvkWIT(ix.Kind)}
		switch {
		case ix.By.Owner:
			def.By.Tag = types3.IndexByTagOwner
		case ix.By.Label != "":
			def.By.Tag, def.By.Label = types3.IndexByTagLabel, ix.By.Label
		default:
			def.By.Tag, def.By.Field = types3.IndexByTagField, ix.By.Field
		}
		out.Indexes = append(out.Indexes, def)
	}
	return out
}
