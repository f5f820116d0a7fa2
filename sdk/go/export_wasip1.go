//go:build wasip1

package herald

import (
	"time"

	"herald.dev/sdk/go/internal/cabi"
	handler "herald.dev/sdk/go/internal/wit/herald/plugin/v0.2.0/handler"
	types2 "herald.dev/sdk/go/internal/wit/herald/plugin/v0.2.0/types"
	types3 "herald.dev/sdk/go/internal/wit/herald/plugin/v0.3.0/types"
	world "herald.dev/sdk/go/internal/wit/world"
)

// The component's exports call the registered handler.
func init() {
	world.ExportManifest = func() types3.Manifest { return must().Manifest().toWIT() }
	handler.ExportOnAdd = func(ctx types2.EventContext, obj string) cabi.Result[struct{}, string] {
		return result(must().OnAdd(&Event{Context: fromWIT(ctx), JSON: obj}))
	}
	handler.ExportOnUpdate = func(ctx types2.EventContext, old, new string) cabi.Result[struct{}, string] {
		return result(must().OnUpdate(&Update{Context: fromWIT(ctx), OldJSON: old, NewJSON: new}))
	}
	handler.ExportOnDelete = func(ctx types2.EventContext, obj string) cabi.Result[struct{}, string] {
		return result(must().OnDelete(&Event{Context: fromWIT(ctx), JSON: obj}))
	}
}

func must() Handler {
	if registered == nil {
		panic("herald: no handler registered: call herald.Register from an init function of the main package")
	}
	return registered
}

func result(err error) cabi.Result[struct{}, string] {
	if err != nil {
		return cabi.Err[struct{}](errorText(err))
	}
	return cabi.OK[struct{}, string](struct{}{})
}

func fromWIT(c types2.EventContext) Context {
	return Context{
		Kind:              gvkFromWIT(c.Kind),
		Resource:          c.Resource,
		Key:               c.Key,
		ResourceVersion:   c.ResourceVersion,
		IsInitialList:     c.IsInitialList,
		IsResync:          c.IsResync,
		FinalStateUnknown: c.FinalStateUnknown,
	}
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
