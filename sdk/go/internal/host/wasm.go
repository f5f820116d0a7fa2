//go:build wasip1

package host

import (
	"errors"
	"time"

	"herald.dev/sdk/go/internal/wit/herald/plugin/v0.2.0/cache"
	"herald.dev/sdk/go/internal/wit/herald/plugin/v0.2.0/config"
	"herald.dev/sdk/go/internal/wit/herald/plugin/v0.2.0/events"
	"herald.dev/sdk/go/internal/wit/herald/plugin/v0.2.0/kube"
	"herald.dev/sdk/go/internal/wit/herald/plugin/v0.2.0/log"
	"herald.dev/sdk/go/internal/wit/herald/plugin/v0.2.0/types"
	"herald.dev/sdk/go/internal/wit/herald/plugin/v0.3.0/index"
	"herald.dev/sdk/go/internal/wit/herald/plugin/v0.3.0/metrics"
	"herald.dev/sdk/go/internal/wit/herald/plugin/v0.3.0/workqueue"
	"herald.dev/sdk/go/internal/wit/herald/plugin/v0.4.0/deadline"
	"herald.dev/sdk/go/internal/wit/herald/plugin/v0.6.0/cluster"
)

func init() { Current = wasmHost{} }

// wasmHost answers through the generated bindings, i.e. the Herald host.
type wasmHost struct{}

func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func gvk(k GVK) plugin_types.GroupVersionKind {
	return plugin_types.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
}

func fromGVK(k plugin_types.GroupVersionKind) GVK { return GVK{k.Group, k.Version, k.Kind} }

func (wasmHost) Log(level Level, message string) {
	plugin_log.Log(plugin_log.Level(level), message)
}

func (wasmHost) Config() (string, bool) {
	c := plugin_config.Get()
	if c == nil {
		return "", false
	}
	return *c, true
}

func cacheError(e plugin_cache.CacheError) error {
	switch e.Tag {
	case plugin_cache.CacheErrorTagNotSubscribed:
		return &CacheError{NotSubscribed: true, Kind: fromGVK(e.NotSubscribed)}
	default:
		return &CacheError{InvalidSelector: e.InvalidSelector}
	}
}

func (wasmHost) CacheGet(kind GVK, namespace, name string) (string, bool, error) {
	r := plugin_cache.Get(gvk(kind), opt(namespace), name)
	if r.IsErr {
		return "", false, cacheError(r.Err)
	}
	if r.Ok == nil {
		return "", false, nil
	}
	return *r.Ok, true, nil
}

func (wasmHost) CacheList(kind GVK, namespace, labelSelector string) ([]string, error) {
	r := plugin_cache.List(gvk(kind), opt(namespace), opt(labelSelector))
	if r.IsErr {
		return nil, cacheError(r.Err)
	}
	return r.Ok, nil
}

func (wasmHost) IndexLookup(name, value, namespace string) ([]string, error) {
	r := plugin_index.Lookup(name, value, opt(namespace))
	if r.IsErr {
		return nil, &CacheError{UnknownIndex: r.Err.UnknownIndex}
	}
	return r.Ok, nil
}

func target(t Target) plugin_kube.Target {
	return plugin_kube.Target{Kind: gvk(t.Kind), Namespace: opt(t.Namespace), Name: t.Name, Subresource: opt(t.Subresource)}
}

func kubeError(e plugin_kube.KubeError) error {
	out := &KubeError{Kind: KubeErrorKind(e.Tag)}
	switch e.Tag {
	case plugin_kube.KubeErrorTagNotGranted:
		out.Message = e.NotGranted
	case plugin_kube.KubeErrorTagNotFound:
		out.Message = e.NotFound
	case plugin_kube.KubeErrorTagAlreadyExists:
		out.Message = e.AlreadyExists
	case plugin_kube.KubeErrorTagConflict:
		out.Message = e.Conflict
	case plugin_kube.KubeErrorTagInvalid:
		out.Message = e.Invalid.Message
		for _, c := range e.Invalid.Causes {
			out.Causes = append(out.Causes, Cause{Reason: c.Reason, Message: c.Message, Field: c.Field})
		}
	case plugin_kube.KubeErrorTagForbidden:
		out.Message = e.Forbidden
	case plugin_kube.KubeErrorTagTooManyRequests:
		out.Message = e.TooManyRequests.Message
		if ms := e.TooManyRequests.RetryAfterMs; ms != nil {
			out.RetryAfter = time.Duration(*ms) * time.Millisecond
		}
	case plugin_kube.KubeErrorTagTimeout:
		out.Message = e.Timeout
	case plugin_kube.KubeErrorTagUnavailable:
		out.Message = e.Unavailable
	case plugin_kube.KubeErrorTagFailed:
		out.Code, out.Reason, out.Message = e.Failed.Code, e.Failed.Reason, e.Failed.Message
	}
	return out
}

func (wasmHost) KubeGet(t Target) (string, error) {
	r := plugin_kube.Get(target(t))
	if r.IsErr {
		return "", kubeError(r.Err)
	}
	return r.Ok, nil
}

func (wasmHost) KubeCreate(kind GVK, namespace, object string) (string, error) {
	r := plugin_kube.Create(gvk(kind), opt(namespace), object)
	if r.IsErr {
		return "", kubeError(r.Err)
	}
	return r.Ok, nil
}

func (wasmHost) KubeReplace(t Target, object string) (string, error) {
	r := plugin_kube.Replace(target(t), object)
	if r.IsErr {
		return "", kubeError(r.Err)
	}
	return r.Ok, nil
}

func (wasmHost) KubePatch(t Target, patchType PatchType, patch string) (string, error) {
	r := plugin_kube.Patch(target(t), plugin_kube.PatchType(patchType), patch)
	if r.IsErr {
		return "", kubeError(r.Err)
	}
	return r.Ok, nil
}

func (wasmHost) KubeApply(t Target, object string, force bool) (string, error) {
	r := plugin_kube.Apply(target(t), object, force)
	if r.IsErr {
		return "", kubeError(r.Err)
	}
	return r.Ok, nil
}

func (wasmHost) KubeDelete(t Target, options DeleteOptions) error {
	o := plugin_kube.DeleteOptions{Uid: opt(options.UID), ResourceVersion: opt(options.ResourceVersion)}
	if options.Propagation != PropagationDefault {
		p := plugin_kube.Propagation(options.Propagation - 1)
		o.Propagation = &p
	}
	r := plugin_kube.Delete(target(t), o)
	if r.IsErr {
		return kubeError(r.Err)
	}
	return nil
}

func reference(r ObjectReference) plugin_events.ObjectReference {
	return plugin_events.ObjectReference{Kind: gvk(r.Kind), Namespace: opt(r.Namespace), Name: r.Name, Uid: opt(r.UID), ResourceVersion: opt(r.ResourceVersion)}
}

func (wasmHost) PublishEvent(e Event) error {
	ev := plugin_events.Event{
		Regarding: reference(e.Regarding),
		EventType: plugin_events.EventType(e.Type),
		Reason:    e.Reason,
		Action:    e.Action,
		Note:      e.Note,
	}
	if e.Related != nil {
		related := reference(*e.Related)
		ev.Related = &related
	}
	r := plugin_events.Publish(ev)
	if r.IsErr {
		return kubeError(r.Err)
	}
	return nil
}

func (wasmHost) MetricAdd(name string, labelValues []string, value float64) {
	plugin_metrics.Add(name, labelValues, value)
}

func (wasmHost) MetricSet(name string, labelValues []string, value float64) {
	plugin_metrics.Set(name, labelValues, value)
}

func (wasmHost) MetricObserve(name string, labelValues []string, value float64) {
	plugin_metrics.Observe(name, labelValues, value)
}

func (wasmHost) RequeueAfter(delay time.Duration) {
	plugin_workqueue.RequeueAfter(uint64(delay / time.Millisecond))
}

func (wasmHost) DeadlineRemaining() time.Duration {
	return time.Duration(plugin_deadline.RemainingMs()) * time.Millisecond
}

func (wasmHost) ClusterCurrent() string { return plugin_cluster.Current() }

func (wasmHost) ClusterNames() []string { return plugin_cluster.Names() }

func (wasmHost) ClusterTarget(name *string) error {
	if r := plugin_cluster.Target(name); r.IsErr {
		return errors.New(r.Err)
	}
	return nil
}
