package herald

import (
	"fmt"
	"strings"
	"time"
)

// Manifest is what a plugin is and needs, returned by Handler.Manifest and
// read once per load. Build it with NewManifest and the chained methods:
//
//	herald.NewManifest("pod-phases", "0.1.0").
//		Subscribe(herald.SubscriptionTo[corev1.Pod]().InNamespace("shop").Coalesced()).
//		Write(herald.WriteRuleFor[corev1.Pod]().Allow(herald.VerbPatch).InNamespaces("shop")).
//		Capability("events").
//		Metric(herald.CounterMetric("restarts_total", "Container restarts seen").Labels("namespace"))
type Manifest struct {
	// Name is the unique plugin name: lowercase letters, digits and `-`.
	Name string
	// Version is the plugin's own version (free-form, semver advised).
	Version string
	// Subscriptions are the resources watched; the host requires one, or a
	// webhook.
	Subscriptions []*Subscription
	// Limits are the limits requested; zero fields take the operator's.
	Limits Limits
	// Capabilities beyond logging and cache reads, each granted by the
	// operator or the plugin is not loaded: `events` (package events),
	// `http` (package wasihttp).
	Capabilities []string
	// Writes are the Kubernetes writes (and API reads) made through
	// package kube; each must be covered by the operator's grant.
	Writes []*WriteRule
	// Metrics are the metrics updated through package metrics.
	Metrics []*Metric
	// Indexes are the cache indexes looked up through cache.ByIndex.
	Indexes []*Index
	// ValidatingWebhook is the writes Validate decides on (see Validating);
	// nil for none.
	ValidatingWebhook *Webhook
	// MutatingWebhook is the writes Mutate decides on and may change (see
	// Mutating); nil for none.
	MutatingWebhook *Webhook
}

// NewManifest is a manifest with no subscriptions, default limits, no
// capabilities and no writes.
func NewManifest(name, version string) *Manifest {
	return &Manifest{Name: name, Version: version}
}

// Subscribe adds a subscription.
func (m *Manifest) Subscribe(s *Subscription) *Manifest {
	m.Subscriptions = append(m.Subscriptions, s)
	return m
}

// SubscribeKind adds a subscription to every object of a kind named by
// strings (a CRD, say), in every namespace, without selectors.
func (m *Manifest) SubscribeKind(group, version, kind string) *Manifest {
	return m.Subscribe(NewSubscription(GVK(group, version, kind)))
}

// WithLimits sets the limits requested.
func (m *Manifest) WithLimits(l Limits) *Manifest {
	m.Limits = l
	return m
}

// Capability asks for a host capability: `events` or `http`.
func (m *Manifest) Capability(name string) *Manifest {
	m.Capabilities = append(m.Capabilities, name)
	return m
}

// Write declares writes (or API reads) made through package kube.
func (m *Manifest) Write(rule *WriteRule) *Manifest {
	m.Writes = append(m.Writes, rule)
	return m
}

// Metric declares a metric updated through package metrics.
func (m *Manifest) Metric(metric *Metric) *Manifest {
	m.Metrics = append(m.Metrics, metric)
	return m
}

// Index declares a cache index looked up with cache.ByIndex.
func (m *Manifest) Index(index *Index) *Manifest {
	m.Indexes = append(m.Indexes, index)
	return m
}

// Validating declares the plugin's validating webhook: the writes its
// Validate method (Validator) decides on. A plugin that admits may
// subscribe to nothing:
//
//	herald.NewManifest("no-latest", "0.1.0").
//		Validating(herald.NewWebhook().Rule(herald.AdmissionRuleFor[corev1.Pod]().Create().Update()))
func (m *Manifest) Validating(webhook *Webhook) *Manifest {
	m.ValidatingWebhook = webhook
	return m
}

// Mutating declares the plugin's mutating webhook: the writes its Mutate
// method (Mutator) decides on and may change.
func (m *Manifest) Mutating(webhook *Webhook) *Manifest {
	m.MutatingWebhook = webhook
	return m
}

// Delivery is how notifications of a subscription are queued.
type Delivery uint8

const (
	// EveryEvent delivers every notification, one at a time, in order
	// (client-go's behaviour).
	EveryEvent Delivery = iota
	// Coalesced keeps at most one pending notification per object, merged
	// while it waits: for level-triggered plugins.
	Coalesced
)

// String is the WIT name of the mode.
func (d Delivery) String() string { return [...]string{"every-event", "coalesced"}[d] }

// Subscription is one watched resource: a kind, an optional namespace,
// selectors, a resync period and a delivery mode.
type Subscription struct {
	Kind GroupVersionKind
	// Namespace limits it to one namespace; "" is every namespace.
	Namespace string
	// LabelSelector, e.g. `app=web,tier!=cache`; "" is none.
	LabelSelector string
	// FieldSelector, e.g. `spec.nodeName=node-1`; "" is none.
	FieldSelector string
	// Resync re-delivers every cached object this often (at least a
	// second) as an update with IsResync; 0 is no resync.
	Resync   time.Duration
	Delivery Delivery
}

// NewSubscription watches every object of kind, every event delivered.
func NewSubscription(kind GroupVersionKind) *Subscription {
	return &Subscription{Kind: kind}
}

// SubscriptionTo watches every object of the Go type T, e.g.
// SubscriptionTo[corev1.Pod]() (see KindOf).
func SubscriptionTo[T any]() *Subscription { return NewSubscription(KindOf[T]()) }

// InNamespace limits the subscription to namespace.
func (s *Subscription) InNamespace(namespace string) *Subscription {
	s.Namespace = namespace
	return s
}

// Labels limits it to objects matching the label selector.
func (s *Subscription) Labels(selector string) *Subscription {
	s.LabelSelector = selector
	return s
}

// Fields limits it to objects matching the field selector.
func (s *Subscription) Fields(selector string) *Subscription {
	s.FieldSelector = selector
	return s
}

// ResyncEvery re-delivers every cached object each period.
func (s *Subscription) ResyncEvery(period time.Duration) *Subscription {
	s.Resync = period
	return s
}

// Coalesced keeps at most one pending notification per object.
func (s *Subscription) Coalesced() *Subscription {
	s.Delivery = Coalesced
	return s
}

// Limits are what a plugin asks for; zero fields take the operator's
// defaults, and the operator's maxima cap them.
type Limits struct {
	// CallDeadline bounds one handler call.
	CallDeadline time.Duration
	// MemoryBytes bounds the instance's linear memory.
	MemoryBytes uint64
}

// Verb is a Kubernetes API verb a plugin may use through package kube.
type Verb uint8

// The verbs of the WIT's types.verb.
const (
	VerbGet Verb = iota
	VerbCreate
	// VerbUpdate is kube's Replace; Kubernetes calls it update.
	VerbUpdate
	VerbPatch
	// VerbApply is server-side apply.
	VerbApply
	VerbDelete
)

var verbNames = [...]string{"get", "create", "update", "patch", "apply", "delete"}

// String is the lowercase name the WIT and the host's configuration use.
func (v Verb) String() string { return verbNames[v] }

// ParseVerb reads a verb name case-insensitively; `replace` is update.
func ParseVerb(name string) (Verb, error) {
	n := strings.ToLower(name)
	if n == "replace" {
		return VerbUpdate, nil
	}
	for i, v := range verbNames {
		if v == n {
			return Verb(i), nil
		}
	}
	return 0, fmt.Errorf("unknown verb %q (expected get, create, update, patch, apply or delete)", name)
}

// WriteRule is writes a plugin will make: verbs on one kind (or its
// status), in some namespaces (at least one: the host refuses a rule that
// names none).
type WriteRule struct {
	Verbs []Verb
	Group string
	Kind  string
	// Subresource is "" for the object, "status" for its status.
	Subresource string
	// Namespaces; `*` is every namespace and cluster-scoped objects.
	Namespaces []string
}

// WriteRuleFor is a rule about the Go type T, with no verbs yet.
func WriteRuleFor[T any]() *WriteRule {
	k := KindOf[T]()
	return NewWriteRule(k.Group, k.Kind)
}

// NewWriteRule is a rule about a kind named by strings, with no verbs yet.
func NewWriteRule(group, kind string) *WriteRule {
	return &WriteRule{Group: group, Kind: kind}
}

// Allow adds verbs; duplicates are dropped.
func (r *WriteRule) Allow(verbs ...Verb) *WriteRule {
	for _, v := range verbs {
		dup := false
		for _, have := range r.Verbs {
			dup = dup || have == v
		}
		if !dup {
			r.Verbs = append(r.Verbs, v)
		}
	}
	return r
}

// InNamespaces adds namespaces the writes happen in.
func (r *WriteRule) InNamespaces(namespaces ...string) *WriteRule {
	r.Namespaces = append(r.Namespaces, namespaces...)
	return r
}

// AllNamespaces is every namespace and cluster-scoped objects: `*`.
func (r *WriteRule) AllNamespaces() *WriteRule { return r.InNamespaces("*") }

// Status makes the rule about the status subresource.
func (r *WriteRule) Status() *WriteRule {
	r.Subresource = "status"
	return r
}

// MetricKind is counter, gauge or histogram.
type MetricKind uint8

// The WIT's types.metric-kind.
const (
	Counter MetricKind = iota
	Gauge
	Histogram
)

// String is the WIT name of the kind.
func (k MetricKind) String() string { return [...]string{"counter", "gauge", "histogram"}[k] }

// Metric is one metric the plugin updates, exported by the host as
// `herald_plugin_<name>` with a `plugin` label.
type Metric struct {
	Name string
	Help string
	Kind MetricKind
	// LabelNames are the labels; every update gives one value for each.
	LabelNames []string
	// Buckets are a histogram's upper bounds; empty for Prometheus'
	// defaults.
	Buckets []float64
}

// CounterMetric declares a counter (its name ends in `_total`).
func CounterMetric(name, help string) *Metric { return &Metric{Name: name, Help: help, Kind: Counter} }

// GaugeMetric declares a gauge.
func GaugeMetric(name, help string) *Metric { return &Metric{Name: name, Help: help, Kind: Gauge} }

// HistogramMetric declares a histogram.
func HistogramMetric(name, help string) *Metric {
	return &Metric{Name: name, Help: help, Kind: Histogram}
}

// Labels sets the label names.
func (m *Metric) Labels(names ...string) *Metric {
	m.LabelNames = append(m.LabelNames, names...)
	return m
}

// WithBuckets sets a histogram's bucket upper bounds, strictly increasing.
func (m *Metric) WithBuckets(bounds ...float64) *Metric {
	m.Buckets = append(m.Buckets, bounds...)
	return m
}

// IndexBy is what an index files each cached object under.
type IndexBy struct {
	// Label files objects by this label's value.
	Label string
	// Field files them by the value at this dotted path (`spec.nodeName`).
	Field string
	// Owner files them by the UID of each owner reference.
	Owner bool
}

// Index is a secondary index of the cache of one subscribed kind.
type Index struct {
	Name string
	Kind GroupVersionKind
	By   IndexBy
}

// IndexByLabel files objects of kind by the value of label.
func IndexByLabel(name string, kind GroupVersionKind, label string) *Index {
	return &Index{Name: name, Kind: kind, By: IndexBy{Label: label}}
}

// IndexByField files objects of kind by the value at a dotted field path.
func IndexByField(name string, kind GroupVersionKind, path string) *Index {
	return &Index{Name: name, Kind: kind, By: IndexBy{Field: path}}
}

// IndexByOwner files objects of kind by their owners' UIDs.
func IndexByOwner(name string, kind GroupVersionKind) *Index {
	return &Index{Name: name, Kind: kind, By: IndexBy{Owner: true}}
}
