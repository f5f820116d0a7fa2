// Package host is the seam between the SDK and whatever answers its calls:
// the Herald host through the generated bindings when built for
// GOOS=wasip1 (wasm.go), or the stand-in of package heraldtest in native
// tests. The SDK's public packages call Get(); nothing else reaches the ABI.
package host

import (
	"fmt"
	"time"
)

// Level is a log line's severity.
type Level uint8

// The levels of the WIT's log.level.
const (
	LevelTrace Level = iota
	LevelDebug
	LevelInfo
	LevelWarn
	LevelError
)

// String is the WIT name of the level.
func (l Level) String() string {
	return [...]string{"trace", "debug", "info", "warn", "error"}[l]
}

// GVK is a group, version and kind; the core group is "".
type GVK struct {
	Group, Version, Kind string
}

// String formats as `group/version/Kind` (`v1/Pod` for the core group).
func (g GVK) String() string {
	if g.Group == "" {
		return g.Version + "/" + g.Kind
	}
	return g.Group + "/" + g.Version + "/" + g.Kind
}

// Target is the object (or subresource) a kube call is about. An empty
// Namespace means a cluster-scoped object; an empty Subresource the object
// itself.
type Target struct {
	Kind        GVK
	Namespace   string
	Name        string
	Subresource string
}

// PatchType says how a patch document is read.
type PatchType uint8

// The WIT's kube.patch-type.
const (
	PatchMerge PatchType = iota
	PatchJSON
	PatchStrategic
)

// String is the WIT name of the patch type.
func (p PatchType) String() string { return [...]string{"merge", "json", "strategic"}[p] }

// Propagation is a delete's treatment of dependents; PropagationDefault
// leaves it to the kind.
type Propagation uint8

// The WIT's kube.propagation, plus the default.
const (
	PropagationDefault Propagation = iota
	PropagationOrphan
	PropagationBackground
	PropagationForeground
)

// DeleteOptions are a delete's preconditions and propagation; empty strings
// mean no precondition.
type DeleteOptions struct {
	UID             string
	ResourceVersion string
	Propagation     Propagation
}

// KubeErrorKind names the cases of the WIT's kube-error.
type KubeErrorKind uint8

// The cases of kube-error, plus the SDK's own Encoding.
const (
	NotGranted KubeErrorKind = iota
	NotFound
	AlreadyExists
	Conflict
	Invalid
	Forbidden
	TooManyRequests
	Timeout
	Unavailable
	Failed
	// Encoding is the SDK's: a body that would not encode or an answer
	// that would not decode. No request was made, or its answer is lost.
	Encoding
)

var kubeErrorNames = [...]string{"not-granted", "not-found", "already-exists", "conflict", "invalid", "forbidden", "too-many-requests", "timeout", "unavailable", "failed", "encoding"}

// String is the kebab-case name (the WIT case name).
func (k KubeErrorKind) String() string { return kubeErrorNames[k] }

// Cause is one reason the API server gave for refusing an object.
type Cause struct {
	Reason  string
	Message string
	Field   string
}

// KubeError is why a Kubernetes call failed: the WIT's kube-error.
type KubeError struct {
	// Kind says which failure this is.
	Kind KubeErrorKind
	// Message is the host's or the API server's text.
	Message string
	// Causes are the fields at fault (Invalid).
	Causes []Cause
	// RetryAfter is how long to wait (TooManyRequests), when known.
	RetryAfter time.Duration
	// Code and Reason are the server's status (Failed).
	Code   uint16
	Reason string
}

func (e *KubeError) Error() string {
	switch e.Kind {
	case Failed:
		return fmt.Sprintf("kube: failed: %d %s: %s", e.Code, e.Reason, e.Message)
	case Invalid:
		s := "kube: invalid: " + e.Message
		for _, c := range e.Causes {
			s += fmt.Sprintf("; %s: %s (%s)", c.Field, c.Message, c.Reason)
		}
		return s
	case TooManyRequests:
		if e.RetryAfter > 0 {
			return fmt.Sprintf("kube: too-many-requests: %s (retry after %s)", e.Message, e.RetryAfter)
		}
	}
	return "kube: " + e.Kind.String() + ": " + e.Message
}

// CacheError is why a cache or index look-up could not be answered.
type CacheError struct {
	// NotSubscribed is set when the plugin did not subscribe to Kind.
	NotSubscribed bool
	Kind          GVK
	// InvalidSelector is the parser's complaint about a label selector.
	InvalidSelector string
	// UnknownIndex names an index the manifest does not declare.
	UnknownIndex string
}

func (e *CacheError) Error() string {
	switch {
	case e.NotSubscribed:
		return "cache: not subscribed to " + e.Kind.String()
	case e.UnknownIndex != "":
		return "cache: unknown index " + e.UnknownIndex
	}
	return "cache: invalid selector: " + e.InvalidSelector
}

// EventType is Normal or Warning.
type EventType uint8

// The WIT's events.event-type.
const (
	EventNormal EventType = iota
	EventWarning
)

// String is the Kubernetes name of the type.
func (t EventType) String() string { return [...]string{"Normal", "Warning"}[t] }

// ObjectReference is the object an Event is about.
type ObjectReference struct {
	Kind            GVK
	Namespace       string
	Name            string
	UID             string
	ResourceVersion string
}

// Event is one Kubernetes Event to publish.
type Event struct {
	Regarding ObjectReference
	Related   *ObjectReference
	Type      EventType
	Reason    string
	Action    string
	Note      string
}

// Host answers the SDK's calls.
type Host interface {
	Log(level Level, message string)
	Config() (string, bool)
	CacheGet(kind GVK, namespace, name string) (string, bool, error)
	CacheList(kind GVK, namespace, labelSelector string) ([]string, error)
	IndexLookup(name, value, namespace string) ([]string, error)
	KubeGet(target Target) (string, error)
	KubeCreate(kind GVK, namespace, object string) (string, error)
	KubeReplace(target Target, object string) (string, error)
	KubePatch(target Target, patchType PatchType, patch string) (string, error)
	KubeApply(target Target, object string, force bool) (string, error)
	KubeDelete(target Target, options DeleteOptions) error
	PublishEvent(event Event) error
	MetricAdd(name string, labelValues []string, value float64)
	MetricSet(name string, labelValues []string, value float64)
	MetricObserve(name string, labelValues []string, value float64)
	RequeueAfter(delay time.Duration)
	// DeadlineRemaining is what is left of the call under way before its
	// deadline, to the millisecond; zero once it has passed.
	DeadlineRemaining() time.Duration
	// ClusterCurrent is the cluster of the call under way.
	ClusterCurrent() string
	// ClusterNames are the clusters the plugin runs on, sorted.
	ClusterNames() []string
	// ClusterTarget makes name the call's cluster (nil: back to the
	// notification's); an error names why it is refused.
	ClusterTarget(name *string) error
}

// Current answers the SDK's calls: the Herald host under GOOS=wasip1, the
// stand-in a test installs (heraldtest.New) otherwise.
var Current Host

// HTTP, when set (by heraldtest), answers wasihttp's requests instead of
// wasi:http. It is a func(*http.Request) (*http.Response, error), typed any
// so that plugins without HTTP do not link net/http.
var HTTP any

// Get returns the current host, or panics with a hint when there is none
// (a native test that did not call heraldtest.New).
func Get() Host {
	if Current == nil {
		panic("herald: no host: natively, install the test host with heraldtest.New(t)")
	}
	return Current
}
