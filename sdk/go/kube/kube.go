// Package kube reads and writes through the Kubernetes API server with the
// host's client and the handler call's deadline. Every call must be
// declared in the manifest (herald.WriteRuleFor and Manifest.Write) and
// granted by the operator, or it fails with NotGranted before any request
// is sent.
//
//	pods := kube.Namespaced[corev1.Pod]("shop")
//	pod, err := pods.Patch("web-0", kube.MergePatch(map[string]any{
//		"metadata": map[string]any{"labels": map[string]string{"seen": "true"}},
//	}))
//	switch {
//	case kube.IsNotFound(err): // gone already
//	case err != nil:
//		return err // the host retries
//	}
//
// Bodies get apiVersion, kind, metadata.name and metadata.namespace filled
// in when missing, so Apply takes a partial object.
package kube

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	herald "herald.dev/sdk/go"
	"herald.dev/sdk/go/internal/host"
)

// Error is why a call failed; its Kind mirrors the WIT's kube-error
// (NotGranted, NotFound, AlreadyExists, Conflict, Invalid, Forbidden,
// TooManyRequests, Timeout, Unavailable, Failed) plus the SDK's Encoding.
type Error = host.KubeError

// ErrorKind names the cases of Error.
type ErrorKind = host.KubeErrorKind

// The kinds of Error.
const (
	NotGranted      = host.NotGranted
	NotFound        = host.NotFound
	AlreadyExists   = host.AlreadyExists
	Conflict        = host.Conflict
	Invalid         = host.Invalid
	Forbidden       = host.Forbidden
	TooManyRequests = host.TooManyRequests
	Timeout         = host.Timeout
	Unavailable     = host.Unavailable
	Failed          = host.Failed
	Encoding        = host.Encoding
)

// Cause is one field the API server refused (Invalid).
type Cause = host.Cause

// Kind returns err's kind and true if err is (or wraps) an *Error.
func Kind(err error) (ErrorKind, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind, true
	}
	return 0, false
}

func is(err error, k ErrorKind) bool {
	got, ok := Kind(err)
	return ok && got == k
}

// IsNotFound: 404, the object (or its namespace or kind) does not exist.
func IsNotFound(err error) bool { return is(err, NotFound) }

// IsConflict: a stale resourceVersion, a failed precondition, or an apply
// conflict.
func IsConflict(err error) bool { return is(err, Conflict) }

// IsAlreadyExists: create of an object that exists.
func IsAlreadyExists(err error) bool { return is(err, AlreadyExists) }

// IsNotGranted: outside the plugin's write rules or grants; nothing sent.
func IsNotGranted(err error) bool { return is(err, NotGranted) }

// IsRetryable says whether a later retry may succeed (conflict,
// throttling, timeout, unavailable).
func IsRetryable(err error) bool {
	k, ok := Kind(err)
	return ok && (k == Conflict || k == TooManyRequests || k == Timeout || k == Unavailable)
}

// Patch is a patch document and how to read it.
type Patch struct {
	Type host.PatchType
	Body any
}

// MergePatch is a JSON merge patch (RFC 7386).
func MergePatch(body any) Patch { return Patch{Type: host.PatchMerge, Body: body} }

// JSONPatch is a JSON patch (RFC 6902): a list of operations.
func JSONPatch(ops any) Patch { return Patch{Type: host.PatchJSON, Body: ops} }

// StrategicPatch is Kubernetes' strategic merge patch (built-in kinds).
func StrategicPatch(body any) Patch { return Patch{Type: host.PatchStrategic, Body: body} }

// Propagation is a delete's treatment of dependents.
type Propagation = host.Propagation

// The propagation policies; the zero value leaves it to the kind.
const (
	PropagationDefault    = host.PropagationDefault
	PropagationOrphan     = host.PropagationOrphan
	PropagationBackground = host.PropagationBackground
	PropagationForeground = host.PropagationForeground
)

// DeleteOptions are a delete's preconditions (UID, ResourceVersion) and
// propagation.
type DeleteOptions = host.DeleteOptions

// Dynamic reaches objects of any kind as JSON: a CRD without a Go type,
// say. Namespace "" means a cluster-scoped kind.
type Dynamic struct {
	Kind      herald.GroupVersionKind
	Namespace string
}

// NewDynamic is a Dynamic for kind in namespace ("" for cluster-scoped).
func NewDynamic(kind herald.GroupVersionKind, namespace string) Dynamic {
	return Dynamic{Kind: kind, Namespace: namespace}
}

func (d Dynamic) target(name, subresource string) host.Target {
	return host.Target{Kind: d.Kind, Namespace: d.Namespace, Name: name, Subresource: subresource}
}

// body encodes obj (anything encoding/json takes, or a string or
// json.RawMessage of JSON) and fills in apiVersion, kind, metadata.name and
// metadata.namespace where missing.
func (d Dynamic) body(obj any, name string) (string, error) {
	var raw []byte
	switch v := obj.(type) {
	case string:
		raw = []byte(v)
	case json.RawMessage:
		raw = v
	case []byte:
		raw = v
	default:
		b, err := json.Marshal(obj)
		if err != nil {
			return "", &Error{Kind: Encoding, Message: fmt.Sprintf("encoding the %s: %v", d.Kind.Kind, err)}
		}
		raw = b
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return "", &Error{Kind: Encoding, Message: fmt.Sprintf("the %s body is not a JSON object", d.Kind.Kind)}
	}
	if s, _ := fields["apiVersion"].(string); s == "" {
		fields["apiVersion"] = herald.APIVersion(d.Kind)
	}
	if s, _ := fields["kind"].(string); s == "" {
		fields["kind"] = d.Kind.Kind
	}
	meta, _ := fields["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		fields["metadata"] = meta
	}
	if s, _ := meta["name"].(string); s == "" && name != "" {
		meta["name"] = name
	}
	if s, _ := meta["namespace"].(string); s == "" && d.Namespace != "" {
		meta["namespace"] = d.Namespace
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return "", &Error{Kind: Encoding, Message: err.Error()}
	}
	return string(out), nil
}

func patchBody(p Patch) (string, error) {
	switch v := p.Body.(type) {
	case string:
		return v, nil
	case json.RawMessage:
		return string(v), nil
	case []byte:
		return string(v), nil
	}
	b, err := json.Marshal(p.Body)
	if err != nil {
		return "", &Error{Kind: Encoding, Message: "encoding the patch: " + err.Error()}
	}
	return string(b), nil
}

// Get reads the object from the API server (not the cache). Verb get.
func (d Dynamic) Get(name string) (string, error) { return host.Get().KubeGet(d.target(name, "")) }

// GetStatus reads the object's status subresource.
func (d Dynamic) GetStatus(name string) (string, error) {
	return host.Get().KubeGet(d.target(name, "status"))
}

// Create creates obj: the object as stored. Verb create.
func (d Dynamic) Create(obj any) (string, error) {
	body, err := d.body(obj, "")
	if err != nil {
		return "", err
	}
	return host.Get().KubeCreate(d.Kind, d.Namespace, body)
}

// Replace replaces the object (a resourceVersion in it makes the replace
// conditional). Verb update.
func (d Dynamic) Replace(name string, obj any) (string, error) { return d.replace(name, "", obj) }

// ReplaceStatus replaces the object's status.
func (d Dynamic) ReplaceStatus(name string, obj any) (string, error) {
	return d.replace(name, "status", obj)
}

func (d Dynamic) replace(name, sub string, obj any) (string, error) {
	body, err := d.body(obj, name)
	if err != nil {
		return "", err
	}
	return host.Get().KubeReplace(d.target(name, sub), body)
}

// Patch patches the object. Verb patch.
func (d Dynamic) Patch(name string, p Patch) (string, error) { return d.patch(name, "", p) }

// PatchStatus patches the object's status.
func (d Dynamic) PatchStatus(name string, p Patch) (string, error) { return d.patch(name, "status", p) }

func (d Dynamic) patch(name, sub string, p Patch) (string, error) {
	body, err := patchBody(p)
	if err != nil {
		return "", err
	}
	return host.Get().KubePatch(d.target(name, sub), p.Type, body)
}

// Apply server-side applies obj with the field manager herald.<plugin>;
// force takes over fields other managers own. Verb apply.
func (d Dynamic) Apply(name string, obj any, force bool) (string, error) {
	return d.apply(name, "", obj, force)
}

// ApplyStatus server-side applies the object's status.
func (d Dynamic) ApplyStatus(name string, obj any, force bool) (string, error) {
	return d.apply(name, "status", obj, force)
}

func (d Dynamic) apply(name, sub string, obj any, force bool) (string, error) {
	body, err := d.body(obj, name)
	if err != nil {
		return "", err
	}
	return host.Get().KubeApply(d.target(name, sub), body, force)
}

// Delete deletes the object. Verb delete.
func (d Dynamic) Delete(name string, options DeleteOptions) error {
	return host.Get().KubeDelete(d.target(name, ""), options)
}

// API reaches objects of the Go type T (see herald.KindOf), decoding
// answers into T.
type API[T any] struct{ Dynamic }

// Namespaced is the API of the namespaced type T in namespace.
func Namespaced[T any](namespace string) API[T] {
	return API[T]{Dynamic{Kind: herald.KindOf[T](), Namespace: namespace}}
}

// Cluster is the API of the cluster-scoped type T.
func Cluster[T any]() API[T] { return API[T]{Dynamic{Kind: herald.KindOf[T]()}} }

func decode[T any](text string, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	v := new(T)
	if err := json.Unmarshal([]byte(text), v); err != nil {
		return nil, &Error{Kind: Encoding, Message: fmt.Sprintf("decoding the answer as %s: %v", reflect.TypeFor[T](), err)}
	}
	return v, nil
}

// Get reads the object from the API server (not the cache).
func (a API[T]) Get(name string) (*T, error) { return decode[T](a.Dynamic.Get(name)) }

// GetStatus reads the object with its status subresource.
func (a API[T]) GetStatus(name string) (*T, error) { return decode[T](a.Dynamic.GetStatus(name)) }

// Create creates obj.
func (a API[T]) Create(obj *T) (*T, error) { return decode[T](a.Dynamic.Create(obj)) }

// Replace replaces the object.
func (a API[T]) Replace(name string, obj *T) (*T, error) {
	return decode[T](a.Dynamic.Replace(name, obj))
}

// ReplaceStatus replaces the object's status.
func (a API[T]) ReplaceStatus(name string, obj *T) (*T, error) {
	return decode[T](a.Dynamic.ReplaceStatus(name, obj))
}

// Patch patches the object.
func (a API[T]) Patch(name string, p Patch) (*T, error) { return decode[T](a.Dynamic.Patch(name, p)) }

// PatchStatus patches the object's status.
func (a API[T]) PatchStatus(name string, p Patch) (*T, error) {
	return decode[T](a.Dynamic.PatchStatus(name, p))
}

// Apply server-side applies obj (any value encoding to a partial object).
func (a API[T]) Apply(name string, obj any, force bool) (*T, error) {
	return decode[T](a.Dynamic.Apply(name, obj, force))
}

// ApplyStatus server-side applies the object's status.
func (a API[T]) ApplyStatus(name string, obj any, force bool) (*T, error) {
	return decode[T](a.Dynamic.ApplyStatus(name, obj, force))
}
