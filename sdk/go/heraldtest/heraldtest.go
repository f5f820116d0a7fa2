// Package heraldtest stands in for the Herald host so that `go test` runs a
// plugin's handlers natively: it records every log line, Kubernetes write,
// Event, metric update, requeue and HTTP request, serves a cache and the
// plugin's configuration, and answers kube and HTTP calls with scripted
// responses.
//
//	func TestLabelsNewPods(t *testing.T) {
//		h := heraldtest.New(t)
//		h.Respond(herald.VerbPatch, "shop/web-0", map[string]any{"metadata": map[string]any{"name": "web-0"}})
//		p := &Labeller{}
//		if err := p.OnAdd(heraldtest.Added(t, pod("web-0"))); err != nil {
//			t.Fatal(err)
//		}
//		if w := h.Writes(); len(w) != 1 || w[0].Verb != herald.VerbPatch {
//			t.Fatalf("writes: %+v", w)
//		}
//	}
//
// Added, Updated, Deleted and friends build the notifications a handler is
// tested with; Creating, Updating and Deleting the AdmissionReviews of an
// admission plugin's Validate and Mutate.
//
// The stand-in is process-wide: tests using it must not run in parallel.
// It is not an API server: nothing written is stored or merged.
package heraldtest

import (
	"encoding/json"
	"fmt"
	"math"
	"path"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	herald "herald.dev/sdk/go"
	"herald.dev/sdk/go/internal/host"
)

// Host is the stand-in; New installs one.
type Host struct {
	mu sync.Mutex

	logs        []LogLine
	config      *string
	objects     map[objectKey]string
	manifest    *herald.Manifest
	writes      []Write
	responses   []response
	events      []host.Event
	eventAnswer error
	updates     []MetricUpdate
	series      map[string]float64
	observed    map[string][]float64
	requeues    []time.Duration
	remaining   *time.Duration
	clusters    []string
	cluster     string
	target      string

	// HTTP scripts and records outbound HTTP (package wasihttp).
	HTTP *HTTP
}

type objectKey struct {
	kind            herald.GroupVersionKind
	namespace, name string
}

// LogLine is one line the plugin logged.
type LogLine struct {
	Level   string
	Message string
}

// New installs a fresh stand-in host for the rest of the test (and removes
// it when the test ends).
func New(t testing.TB) *Host {
	t.Helper()
	h := &Host{
		objects:  map[objectKey]string{},
		series:   map[string]float64{},
		observed: map[string][]float64{},
	}
	h.HTTP = newHTTP(h)
	host.Current = h
	host.HTTP = h.HTTP.roundTrip
	t.Cleanup(func() {
		if host.Current == h {
			host.Current = nil
			host.HTTP = nil
		}
	})
	return h
}

// ---- logs ----

// Log implements the host's log.
func (h *Host) Log(level host.Level, message string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.logs = append(h.logs, LogLine{Level: level.String(), Message: message})
}

// Logs returns every line logged so far.
func (h *Host) Logs() []LogLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]LogLine(nil), h.logs...)
}

// Messages returns the messages logged so far.
func (h *Host) Messages() []string {
	var out []string
	for _, l := range h.Logs() {
		out = append(out, l.Message)
	}
	return out
}

// TakeMessages returns the messages logged so far and forgets them.
func (h *Host) TakeMessages() []string {
	out := h.Messages()
	h.mu.Lock()
	h.logs = nil
	h.mu.Unlock()
	return out
}

// ---- configuration ----

// SetConfig sets the plugin's configuration: a string is taken as JSON
// text, anything else is encoded; nil removes it.
func (h *Host) SetConfig(v any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if v == nil {
		h.config = nil
		return
	}
	text, ok := v.(string)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			panic(fmt.Sprintf("heraldtest: encoding the configuration: %v", err))
		}
		text = string(b)
	}
	h.config = &text
}

// Config implements the host's config.
func (h *Host) Config() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.config == nil {
		return "", false
	}
	return *h.config, true
}

// ---- the manifest ----

// Declare gives the stand-in the plugin's manifest: metric updates are then
// checked as the host checks them (an update it cannot apply is dropped,
// counted and logged as a warning) and the manifest's indexes answer
// cache.ByIndex.
func (h *Host) Declare(m *herald.Manifest) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.manifest = m
}

// ---- the cache ----

// objectJSON encodes obj and reads its identity; apiVersion and kind come
// from the JSON or from the Go type.
func objectJSON(obj any) (string, objectKey) {
	var text []byte
	switch v := obj.(type) {
	case string:
		text = []byte(v)
	case []byte:
		text = v
	case json.RawMessage:
		text = v
	default:
		b, err := json.Marshal(obj)
		if err != nil {
			panic(fmt.Sprintf("heraldtest: encoding %T: %v", obj, err))
		}
		text = b
	}
	var fields map[string]any
	if err := json.Unmarshal(text, &fields); err != nil || fields == nil {
		panic(fmt.Sprintf("heraldtest: %T is not a JSON object", obj))
	}
	apiVersion, _ := fields["apiVersion"].(string)
	kind, _ := fields["kind"].(string)
	if apiVersion == "" || kind == "" {
		k, ok := herald.KindOfType(reflect.TypeOf(obj))
		if !ok {
			panic(fmt.Sprintf("heraldtest: %T has no apiVersion and kind, and its Go type names no kind", obj))
		}
		fields["apiVersion"], fields["kind"] = herald.APIVersion(k), k.Kind
		apiVersion, kind = herald.APIVersion(k), k.Kind
		text, _ = json.Marshal(fields)
	}
	meta, _ := fields["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	namespace, _ := meta["namespace"].(string)
	group, version, found := strings.Cut(apiVersion, "/")
	if !found {
		group, version = "", apiVersion
	}
	return string(text), objectKey{herald.GVK(group, version, kind), namespace, name}
}

// Cache puts objects (k8s.io/api values, or JSON text) in the cache the
// plugin reads, replacing any with the same kind, namespace and name.
func (h *Host) Cache(objects ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, obj := range objects {
		text, key := objectJSON(obj)
		h.objects[key] = text
	}
}

// Uncache removes an object from the cache.
func (h *Host) Uncache(kind herald.GroupVersionKind, namespace, name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.objects, objectKey{kind, namespace, name})
}

// CacheGet implements the host's cache.get.
func (h *Host) CacheGet(kind herald.GroupVersionKind, namespace, name string) (string, bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	text, ok := h.objects[objectKey{kind, namespace, name}]
	return text, ok, nil
}

// CacheList implements the host's cache.list: equality-based label
// selectors (`a=b`, `a!=b`, `a`, `!a`, comma-separated) are understood.
func (h *Host) CacheList(kind herald.GroupVersionKind, namespace, selector string) ([]string, error) {
	match, err := parseSelector(selector)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var keys []objectKey
	for key, text := range h.objects {
		if key.kind != kind || (namespace != "" && key.namespace != namespace) {
			continue
		}
		if !match(labelsOf(text)) {
			continue
		}
		keys = append(keys, key)
	}
	sortKeys(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = h.objects[k]
	}
	return out, nil
}

func sortKeys(keys []objectKey) {
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].namespace != keys[j].namespace {
			return keys[i].namespace < keys[j].namespace
		}
		return keys[i].name < keys[j].name
	})
}

func labelsOf(text string) map[string]string {
	var obj struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal([]byte(text), &obj)
	return obj.Metadata.Labels
}

func parseSelector(selector string) (func(map[string]string) bool, error) {
	type term struct {
		key, value string
		op         string // "=", "!=", "exists", "!exists"
	}
	var terms []term
	for _, part := range strings.Split(selector, ",") {
		part = strings.TrimSpace(part)
		switch {
		case part == "":
		case strings.Contains(part, "!="):
			k, v, _ := strings.Cut(part, "!=")
			terms = append(terms, term{strings.TrimSpace(k), strings.TrimSpace(v), "!="})
		case strings.Contains(part, "=="):
			k, v, _ := strings.Cut(part, "==")
			terms = append(terms, term{strings.TrimSpace(k), strings.TrimSpace(v), "="})
		case strings.Contains(part, "="):
			k, v, _ := strings.Cut(part, "=")
			terms = append(terms, term{strings.TrimSpace(k), strings.TrimSpace(v), "="})
		case strings.HasPrefix(part, "!"):
			terms = append(terms, term{key: strings.TrimPrefix(part, "!"), op: "!exists"})
		case strings.ContainsAny(part, " ()"):
			return nil, &host.CacheError{InvalidSelector: fmt.Sprintf("set-based selectors are not understood by heraldtest: %q", part)}
		default:
			terms = append(terms, term{key: part, op: "exists"})
		}
	}
	return func(labels map[string]string) bool {
		for _, t := range terms {
			v, ok := labels[t.key]
			switch t.op {
			case "=":
				if !ok || v != t.value {
					return false
				}
			case "!=":
				if ok && v == t.value {
					return false
				}
			case "exists":
				if !ok {
					return false
				}
			case "!exists":
				if ok {
					return false
				}
			}
		}
		return true
	}, nil
}

// IndexLookup implements the host's index.lookup with the indexes of the
// declared manifest.
func (h *Host) IndexLookup(name, value, namespace string) ([]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var index *herald.Index
	if h.manifest != nil {
		for _, ix := range h.manifest.Indexes {
			if ix.Name == name {
				index = ix
			}
		}
	}
	if index == nil {
		return nil, &host.CacheError{UnknownIndex: name}
	}
	var keys []objectKey
	for key, text := range h.objects {
		if key.kind != index.Kind || (namespace != "" && key.namespace != namespace) {
			continue
		}
		for _, v := range indexValues(index, text) {
			if v == value {
				keys = append(keys, key)
				break
			}
		}
	}
	sortKeys(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = h.objects[k]
	}
	return out, nil
}

func indexValues(index *herald.Index, text string) []string {
	var obj map[string]any
	_ = json.Unmarshal([]byte(text), &obj)
	switch {
	case index.By.Owner:
		meta, _ := obj["metadata"].(map[string]any)
		owners, _ := meta["ownerReferences"].([]any)
		var out []string
		for _, o := range owners {
			if m, ok := o.(map[string]any); ok {
				if uid, ok := m["uid"].(string); ok {
					out = append(out, uid)
				}
			}
		}
		return out
	case index.By.Label != "":
		if v, ok := labelsOf(text)[index.By.Label]; ok {
			return []string{v}
		}
		return nil
	}
	var cur any = obj
	for _, part := range strings.Split(index.By.Field, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	switch v := cur.(type) {
	case string:
		return []string{v}
	case float64, bool:
		return []string{fmt.Sprint(v)}
	}
	return nil
}

// ---- kube ----

// Write is one kube call the plugin made.
type Write struct {
	Verb herald.Verb
	// Kind, Namespace, Name and Subresource are the call's target.
	Kind        herald.GroupVersionKind
	Namespace   string
	Name        string
	Subresource string
	// Body is the object or patch sent (after the SDK filled in its
	// identity).
	Body      string
	PatchType string
	Force     bool
	Delete    host.DeleteOptions
	// Cluster is the cluster the call went to: the call's, or the one the
	// plugin targeted.
	Cluster string
}

// Key is `namespace/name` (or `name`).
func (w Write) Key() string {
	if w.Namespace == "" {
		return w.Name
	}
	return w.Namespace + "/" + w.Name
}

// Decode decodes the body into v.
func (w Write) Decode(v any) error { return json.Unmarshal([]byte(w.Body), v) }

type response struct {
	verb    herald.Verb
	pattern string
	once    bool
	body    string
	err     error
}

func answerOf(v any) (string, error) {
	switch a := v.(type) {
	case error:
		return "", a
	case string:
		return a, nil
	case nil:
		return "{}", nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("heraldtest: encoding a response: %v", err))
	}
	return string(b), nil
}

// Respond answers every later call of verb on a target matching pattern
// with answer (an object, JSON text, or an error such as a *kube.Error).
// The pattern is `namespace/name`, `name` (cluster-scoped), or either
// prefixed with a kind (`Pod shop/web-0`); `*` globs. The last scripted
// answer that matches wins; one-shot answers go first.
func (h *Host) Respond(verb herald.Verb, pattern string, answer any) {
	body, err := answerOf(answer)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.responses = append(h.responses, response{verb: verb, pattern: pattern, body: body, err: err})
}

// RespondOnce is Respond for the next matching call only.
func (h *Host) RespondOnce(verb herald.Verb, pattern string, answer any) {
	body, err := answerOf(answer)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.responses = append(h.responses, response{verb: verb, pattern: pattern, once: true, body: body, err: err})
}

func matches(pattern string, w *Write) bool {
	kind, rest, found := strings.Cut(pattern, " ")
	if !found {
		kind, rest = "", pattern
	}
	if kind != "" {
		if ok, _ := path.Match(kind, w.Kind.Kind); !ok {
			return false
		}
	}
	ok, _ := path.Match(rest, w.Key())
	return ok
}

func (h *Host) call(w Write, fallback func() (string, error)) (string, error) {
	h.mu.Lock()
	w.Cluster = h.currentLocked()
	h.writes = append(h.writes, w)
	found := -1
	for i := len(h.responses) - 1; i >= 0; i-- {
		r := h.responses[i]
		if r.verb == w.Verb && r.once && matches(r.pattern, &w) {
			found = i
			break
		}
	}
	if found < 0 {
		for i := len(h.responses) - 1; i >= 0; i-- {
			r := h.responses[i]
			if r.verb == w.Verb && matches(r.pattern, &w) {
				found = i
				break
			}
		}
	}
	if found < 0 {
		h.mu.Unlock()
		return fallback()
	}
	r := h.responses[found]
	if r.once {
		h.responses = append(h.responses[:found], h.responses[found+1:]...)
	}
	h.mu.Unlock()
	return r.body, r.err
}

func write(verb herald.Verb, t host.Target) Write {
	return Write{Verb: verb, Kind: t.Kind, Namespace: t.Namespace, Name: t.Name, Subresource: t.Subresource}
}

func echo(body string) func() (string, error) { return func() (string, error) { return body, nil } }

// KubeGet implements kube.get: unscripted, NotFound.
func (h *Host) KubeGet(t host.Target) (string, error) {
	w := write(herald.VerbGet, t)
	return h.call(w, func() (string, error) {
		return "", &host.KubeError{Kind: host.NotFound, Message: fmt.Sprintf("%s %q not found (heraldtest: unscripted)", t.Kind.Kind, w.Key())}
	})
}

// KubeCreate implements kube.create: unscripted, the body is echoed.
func (h *Host) KubeCreate(kind herald.GroupVersionKind, namespace, object string) (string, error) {
	_, key := objectJSON(object)
	w := Write{Verb: herald.VerbCreate, Kind: kind, Namespace: namespace, Name: key.name, Body: object}
	return h.call(w, echo(object))
}

// KubeReplace implements kube.replace: unscripted, the body is echoed.
func (h *Host) KubeReplace(t host.Target, object string) (string, error) {
	w := write(herald.VerbUpdate, t)
	w.Body = object
	return h.call(w, echo(object))
}

// KubePatch implements kube.patch: unscripted, `{}`.
func (h *Host) KubePatch(t host.Target, patchType host.PatchType, patch string) (string, error) {
	w := write(herald.VerbPatch, t)
	w.Body, w.PatchType = patch, patchType.String()
	return h.call(w, echo("{}"))
}

// KubeApply implements kube.apply: unscripted, the body is echoed.
func (h *Host) KubeApply(t host.Target, object string, force bool) (string, error) {
	w := write(herald.VerbApply, t)
	w.Body, w.Force = object, force
	return h.call(w, echo(object))
}

// KubeDelete implements kube.delete: unscripted, success.
func (h *Host) KubeDelete(t host.Target, options host.DeleteOptions) error {
	w := write(herald.VerbDelete, t)
	w.Delete = options
	_, err := h.call(w, echo(""))
	return err
}

// Writes returns every kube call so far, in order.
func (h *Host) Writes() []Write {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Write(nil), h.writes...)
}

// TakeWrites returns the kube calls so far and forgets them.
func (h *Host) TakeWrites() []Write {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.writes
	h.writes = nil
	return out
}

// ---- events ----

// RespondEvents answers every later Event publish with err (nil: success).
func (h *Host) RespondEvents(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.eventAnswer = err
}

// PublishEvent implements events.publish.
func (h *Host) PublishEvent(e host.Event) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
	return h.eventAnswer
}

// Events returns every Event published so far.
func (h *Host) Events() []host.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]host.Event(nil), h.events...)
}

// TakeEvents returns the Events so far and forgets them.
func (h *Host) TakeEvents() []host.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.events
	h.events = nil
	return out
}

// ---- metrics ----

// MetricUpdate is one metric update the plugin made.
type MetricUpdate struct {
	Op          string // add, set or observe
	Name        string
	LabelValues []string
	Value       float64
	// Dropped says the host would have refused it (with Declare).
	Dropped string
}

func seriesKey(name string, labels []string) string {
	return name + "\x00" + strings.Join(labels, "\x00")
}

func (h *Host) metric(op, name string, labels []string, v float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	u := MetricUpdate{Op: op, Name: name, LabelValues: append([]string(nil), labels...), Value: v}
	if h.manifest != nil {
		u.Dropped = check(h.manifest, op, name, labels, v)
	} else if math.IsNaN(v) {
		u.Dropped = "NaN"
	}
	h.updates = append(h.updates, u)
	if u.Dropped != "" {
		h.logs = append(h.logs, LogLine{Level: "warn", Message: fmt.Sprintf("metric update dropped: %s %s: %s", op, name, u.Dropped)})
		return
	}
	key := seriesKey(name, labels)
	switch op {
	case "add":
		h.series[key] += v
	case "set":
		h.series[key] = v
	case "observe":
		h.observed[key] = append(h.observed[key], v)
	}
}

func check(m *herald.Manifest, op, name string, labels []string, v float64) string {
	var def *herald.Metric
	for _, d := range m.Metrics {
		if d.Name == name {
			def = d
		}
	}
	switch {
	case def == nil:
		return "not declared in the manifest"
	case math.IsNaN(v):
		return "NaN"
	case len(labels) != len(def.LabelNames):
		return fmt.Sprintf("%d label values for %d labels", len(labels), len(def.LabelNames))
	case op == "observe" && def.Kind != herald.Histogram, op != "observe" && def.Kind == herald.Histogram:
		return fmt.Sprintf("%s on a %s", op, def.Kind)
	case op == "set" && def.Kind == herald.Counter:
		return "set on a counter"
	case op == "add" && def.Kind == herald.Counter && v < 0:
		return "negative counter increment"
	}
	return ""
}

// MetricAdd implements metrics.add.
func (h *Host) MetricAdd(name string, labels []string, v float64) { h.metric("add", name, labels, v) }

// MetricSet implements metrics.set.
func (h *Host) MetricSet(name string, labels []string, v float64) { h.metric("set", name, labels, v) }

// MetricObserve implements metrics.observe.
func (h *Host) MetricObserve(name string, labels []string, v float64) {
	h.metric("observe", name, labels, v)
}

// Metric is the value of a counter's or gauge's series; false if it was
// never updated.
func (h *Host) Metric(name string, labelValues ...string) (float64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.series[seriesKey(name, labelValues)]
	return v, ok
}

// Observations are a histogram series' observations, in order.
func (h *Host) Observations(name string, labelValues ...string) []float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]float64(nil), h.observed[seriesKey(name, labelValues)]...)
}

// MetricUpdates returns every update so far, applied or dropped.
func (h *Host) MetricUpdates() []MetricUpdate {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]MetricUpdate(nil), h.updates...)
}

// ---- the work queue ----

// RequeueAfter implements workqueue.requeue-after.
func (h *Host) RequeueAfter(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.requeues = append(h.requeues, d)
}

// Requeues returns the requeue requests so far, in order.
func (h *Host) Requeues() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Duration(nil), h.requeues...)
}

// TakeRequeues returns the requeue requests so far and forgets them.
func (h *Host) TakeRequeues() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.requeues
	h.requeues = nil
	return out
}

// ---- the deadline ----

// DefaultDeadlineRemaining is what deadline.Remaining answers in a test
// that did not call SetDeadlineRemaining.
const DefaultDeadlineRemaining = time.Second

// SetDeadlineRemaining sets what deadline.Remaining answers from now on
// (negative values answer zero, as a passed deadline does).
func (h *Host) SetDeadlineRemaining(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d = max(d, 0).Truncate(time.Millisecond)
	h.remaining = &d
}

// DeadlineRemaining implements deadline.remaining-ms: a second unless
// SetDeadlineRemaining said otherwise.
func (h *Host) DeadlineRemaining() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.remaining == nil {
		return DefaultDeadlineRemaining
	}
	return *h.remaining
}

// DefaultCluster is the default cluster's name in the stand-in host.
const DefaultCluster = "default"

// SetClusters sets the clusters the plugin runs on, as cluster.Names
// answers (DefaultCluster alone until set); the first is the call's cluster
// until SetCluster says otherwise.
func (h *Host) SetClusters(names ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clusters = append([]string(nil), names...)
}

// SetCluster makes name the cluster of the calls that follow, as the host
// does for each notification (ending any target the plugin set): what
// cluster.Current answers, and where recorded writes say they went.
func (h *Host) SetCluster(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cluster, h.target = name, ""
}

func (h *Host) namesLocked() []string {
	if len(h.clusters) == 0 {
		return []string{DefaultCluster}
	}
	names := append([]string(nil), h.clusters...)
	sort.Strings(names)
	return names
}

func (h *Host) currentLocked() string {
	switch {
	case h.target != "":
		return h.target
	case h.cluster != "":
		return h.cluster
	case len(h.clusters) > 0:
		return h.clusters[0]
	}
	return DefaultCluster
}

// ClusterCurrent implements cluster.current.
func (h *Host) ClusterCurrent() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.currentLocked()
}

// ClusterNames implements cluster.names.
func (h *Host) ClusterNames() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.namesLocked()
}

// ClusterTarget implements cluster.target: a cluster the plugin does not
// run on is refused, naming its own.
func (h *Host) ClusterTarget(name *string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if name == nil {
		h.target = ""
		return nil
	}
	names := h.namesLocked()
	for _, known := range names {
		if known == *name {
			h.target = *name
			return nil
		}
	}
	return fmt.Errorf("this plugin is not delivered notifications from a cluster named %q: it may target only its own clusters (%s)",
		*name, strings.Join(names, ", "))
}
