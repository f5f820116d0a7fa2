package herald

// Admission (world 0.5.0): deciding on writes before they reach the
// cluster. A plugin declares its webhooks in the manifest
// (Manifest.Validating, Manifest.Mutating) and implements Validator, Mutator
// or both; the host calls them for each AdmissionReview the API server sends
// it. During an admission call the plugin may read the cache and log, and
// nothing else: kube writes, Events and HTTP are refused, because a review
// must have no side effects (it may be a dry run, and the API server may
// send the same write more than once).

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// Validator is a Handler that decides on the writes its manifest's
// validating webhook covers (Manifest.Validating).
//
// A returned error, or a panic, is a fault: the host answers the review by
// the webhook's failure policy (refused with FailurePolicyFail, the
// default; let through with FailurePolicyIgnore). A refusal is a Verdict
// from Deny, not an error.
type Validator interface {
	Validate(review *AdmissionReview) (*Verdict, error)
}

// Mutator is a Handler that decides on, and may change, the writes its
// manifest's mutating webhook covers (Manifest.Mutating). Errors and panics
// are faults, as Validator's.
type Mutator interface {
	Mutate(review *AdmissionReview) (*Mutation, error)
}

// Operation is what a write does.
type Operation uint8

// The operations of a review, in the WIT's order.
const (
	// OperationCreate is `CREATE`.
	OperationCreate Operation = iota
	// OperationUpdate is `UPDATE`.
	OperationUpdate
	// OperationDelete is `DELETE`.
	OperationDelete
	// OperationConnect is `CONNECT` (exec, attach, port-forward).
	OperationConnect
)

// String is the operation as AdmissionReview spells it: `CREATE`, ...
func (o Operation) String() string {
	return [...]string{"CREATE", "UPDATE", "DELETE", "CONNECT"}[o]
}

// FailurePolicy is what the API server does when the plugin cannot decide
// (an error, a panic, a timeout, the plugin gone).
type FailurePolicy uint8

const (
	// FailurePolicyFail refuses the write (Kubernetes' default, and the
	// zero value).
	FailurePolicyFail FailurePolicy = iota
	// FailurePolicyIgnore lets the write through.
	FailurePolicyIgnore
)

// String is the policy as webhook configurations spell it.
func (p FailurePolicy) String() string { return [...]string{"Fail", "Ignore"}[p] }

// AdmissionRule is one kind of write a webhook covers: a kind, its
// operations (at least one) and optionally a subresource.
type AdmissionRule struct {
	Kind       GroupVersionKind
	Operations []Operation
	// Subresource is "" for the object itself, `status` (or another
	// subresource) for that subresource only.
	Subresource string
}

// AdmissionRuleFor is a rule about the Go type T (see KindOf), with no
// operation yet:
//
//	herald.AdmissionRuleFor[corev1.Pod]().Create().Update()
func AdmissionRuleFor[T any]() *AdmissionRule { return NewAdmissionRule(KindOf[T]()) }

// NewAdmissionRule is a rule about a kind named by strings (a CRD, say),
// with no operation yet.
func NewAdmissionRule(kind GroupVersionKind) *AdmissionRule {
	return &AdmissionRule{Kind: kind}
}

// Operation adds operations; duplicates are dropped.
func (r *AdmissionRule) Operation(operations ...Operation) *AdmissionRule {
	for _, op := range operations {
		dup := false
		for _, have := range r.Operations {
			dup = dup || have == op
		}
		if !dup {
			r.Operations = append(r.Operations, op)
		}
	}
	return r
}

// Create adds `CREATE`.
func (r *AdmissionRule) Create() *AdmissionRule { return r.Operation(OperationCreate) }

// Update adds `UPDATE`.
func (r *AdmissionRule) Update() *AdmissionRule { return r.Operation(OperationUpdate) }

// Delete adds `DELETE`.
func (r *AdmissionRule) Delete() *AdmissionRule { return r.Operation(OperationDelete) }

// Connect adds `CONNECT`.
func (r *AdmissionRule) Connect() *AdmissionRule { return r.Operation(OperationConnect) }

// OfSubresource makes the rule cover subresource (`status`) instead of the
// object itself.
func (r *AdmissionRule) OfSubresource(subresource string) *AdmissionRule {
	r.Subresource = subresource
	return r
}

// Webhook is the writes the API server sends the plugin for one decision
// (validate or mutate).
type Webhook struct {
	// Rules are what it covers; at least one.
	Rules []*AdmissionRule
	// NamespaceSelector limits it to namespaces whose labels match
	// (label-selector syntax); "" is every namespace but the ones the
	// operator leaves out (Herald's own and kube-system by default).
	NamespaceSelector string
	// ObjectSelector limits it to objects whose labels match; "" is all.
	ObjectSelector string
	// FailurePolicy is what happens when the plugin cannot decide.
	FailurePolicy FailurePolicy
	// TimeoutSeconds is how long the API server waits, 1 to 30; 0 is 10,
	// Kubernetes' default.
	TimeoutSeconds uint32
}

// NewWebhook is a webhook with no rule yet, failing closed, with the
// default timeout.
func NewWebhook() *Webhook { return &Webhook{} }

// Rule adds a rule.
func (w *Webhook) Rule(rule *AdmissionRule) *Webhook {
	w.Rules = append(w.Rules, rule)
	return w
}

// NamespacesLabelled limits the webhook to namespaces whose labels match
// selector.
func (w *Webhook) NamespacesLabelled(selector string) *Webhook {
	w.NamespaceSelector = selector
	return w
}

// InNamespaces limits the webhook to the namespaces named (by their
// `kubernetes.io/metadata.name` label, which the API server sets on every
// namespace).
func (w *Webhook) InNamespaces(names ...string) *Webhook {
	return w.NamespacesLabelled("kubernetes.io/metadata.name in (" + strings.Join(names, ",") + ")")
}

// ObjectsLabelled limits the webhook to objects whose labels match
// selector.
func (w *Webhook) ObjectsLabelled(selector string) *Webhook {
	w.ObjectSelector = selector
	return w
}

// WithFailurePolicy sets what happens when the plugin cannot decide.
func (w *Webhook) WithFailurePolicy(policy FailurePolicy) *Webhook {
	w.FailurePolicy = policy
	return w
}

// WithTimeoutSeconds sets how long the API server waits, 1 to 30 seconds.
func (w *Webhook) WithTimeoutSeconds(seconds uint32) *Webhook {
	w.TimeoutSeconds = seconds
	return w
}

// UserInfo is who asked for a write.
type UserInfo struct {
	Username string
	UID      string
	Groups   []string
	// Extra holds the authenticator's extra attributes, by name.
	Extra map[string][]string
}

// AdmissionReview is one write the API server asks about.
type AdmissionReview struct {
	// UID identifies the review (the host echoes it in the answer).
	UID string
	// Kind is the object's kind, in the version the rule named.
	Kind GroupVersionKind
	// Resource is the plural resource name (`pods`).
	Resource string
	// Subresource is the subresource written; "" for the object itself.
	Subresource string
	// Name is the object's name; "" on a create whose name the server
	// generates.
	Name string
	// Namespace is the object's namespace; "" for cluster-scoped kinds.
	Namespace string
	// Operation is what is being done.
	Operation Operation
	// UserInfo is who is doing it.
	UserInfo UserInfo
	// ObjectJSON is the object as it would be stored; "" on a delete.
	ObjectJSON string
	// OldObjectJSON is the object as it is stored; "" on a create.
	OldObjectJSON string
	// DryRun is true when the write will not persist.
	DryRun bool
	// OptionsJSON is the operation's options (CreateOptions,
	// UpdateOptions, DeleteOptions); "" when absent.
	OptionsJSON string
}

// Key is `namespace/name`, or `name` when cluster-scoped, as
// Context.Key.
func (r *AdmissionReview) Key() string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

// Object decodes the object as it would be stored into v (see
// Event.Object); an error on a delete, which carries only the old object.
func (r *AdmissionReview) Object(v any) error {
	if r.ObjectJSON == "" {
		return r.missing("object")
	}
	return decode(r.ObjectJSON, v, "the review's object")
}

// OldObject decodes the object as it is stored into v; an error on a
// create.
func (r *AdmissionReview) OldObject(v any) error {
	if r.OldObjectJSON == "" {
		return r.missing("oldObject")
	}
	return decode(r.OldObjectJSON, v, "the review's oldObject")
}

// ObjectView reads the object as it would be stored lazily (see
// ObjectView).
func (r *AdmissionReview) ObjectView() (*ObjectView, error) {
	if r.ObjectJSON == "" {
		return nil, r.missing("object")
	}
	return readView(r.ObjectJSON, "review's object")
}

// OldObjectView reads the object as it is stored lazily.
func (r *AdmissionReview) OldObjectView() (*ObjectView, error) {
	if r.OldObjectJSON == "" {
		return nil, r.missing("oldObject")
	}
	return readView(r.OldObjectJSON, "review's oldObject")
}

func (r *AdmissionReview) missing(what string) error {
	return fmt.Errorf("the %s review of %s carries no %s", r.Operation, r.Key(), what)
}

// DecodeObject decodes a review's object into a new T:
//
//	pod, err := herald.DecodeObject[corev1.Pod](review)
func DecodeObject[T any](r *AdmissionReview) (*T, error) {
	v := new(T)
	if err := r.Object(v); err != nil {
		return nil, err
	}
	return v, nil
}

// DecodeOldObject decodes a review's old object into a new T.
func DecodeOldObject[T any](r *AdmissionReview) (*T, error) {
	v := new(T)
	if err := r.OldObject(v); err != nil {
		return nil, err
	}
	return v, nil
}

// Verdict is a decision: allow, or refuse with a message; warnings either
// way.
type Verdict struct {
	// Allowed says whether the write may go ahead.
	Allowed bool
	// Code is the HTTP status of a refusal, 400 to 599; 0 is 403.
	Code uint16
	// Message is why it was refused, for the user.
	Message string
	// Warnings are printed by the user's client, allowed or not.
	Warnings []string
}

// Allow lets the write through.
func Allow() *Verdict { return &Verdict{Allowed: true} }

// Deny refuses the write, saying why (403 Forbidden unless WithCode).
func Deny(message string) *Verdict { return &Verdict{Message: message} }

// WithCode sets the HTTP status of the refusal.
func (v *Verdict) WithCode(code uint16) *Verdict {
	v.Code = code
	return v
}

// Warn adds a warning.
func (v *Verdict) Warn(warning string) *Verdict {
	v.Warnings = append(v.Warnings, warning)
	return v
}

// ChangeKind says what a Mutation's Change holds.
type ChangeKind uint8

const (
	// ChangeNone leaves the object as it is.
	ChangeNone ChangeKind = iota
	// ChangeJSONPatch is a JSON Patch (RFC 6902) against the review's
	// object.
	ChangeJSONPatch
	// ChangeObject is the whole changed object; the host computes the
	// patch.
	ChangeObject
)

// String is the WIT name of the case.
func (k ChangeKind) String() string { return [...]string{"none", "json-patch", "object"}[k] }

// Change is a mutating plugin's change to the reviewed object.
type Change struct {
	Kind ChangeKind
	// JSON is the patch (ChangeJSONPatch) or the object (ChangeObject);
	// "" for ChangeNone.
	JSON string
}

// Mutation is what Mutate answers: a decision and a change (ignored when
// the write is refused).
type Mutation struct {
	Verdict Verdict
	Change  Change
}

// Unchanged allows the write as it is.
func Unchanged() *Mutation { return &Mutation{Verdict: *Allow()} }

// Patch allows the write changed by a JSON Patch:
//
//	return herald.Patch(herald.PatchAdd(herald.JSONPointer("metadata", "labels", "team"), "shop"))
//
// The error is the operations' values failing to encode.
func Patch(operations ...PatchOperation) (*Mutation, error) {
	if operations == nil {
		operations = []PatchOperation{}
	}
	text, err := json.Marshal(operations)
	if err != nil {
		return nil, fmt.Errorf("encoding the JSON Patch: %w", err)
	}
	return &Mutation{Verdict: *Allow(), Change: Change{Kind: ChangeJSONPatch, JSON: string(text)}}, nil
}

// ChangedObject allows the write changed into object (the review's object,
// decoded and modified, say); the host computes the patch. The error is
// object failing to encode.
func ChangedObject(object any) (*Mutation, error) {
	text, err := json.Marshal(object)
	if err != nil {
		return nil, fmt.Errorf("encoding the changed object: %w", err)
	}
	return &Mutation{Verdict: *Allow(), Change: Change{Kind: ChangeObject, JSON: string(text)}}, nil
}

// DenyMutation refuses the write from Mutate, as Deny.
func DenyMutation(message string) *Mutation { return &Mutation{Verdict: *Deny(message)} }

// Warn adds a warning to the mutation's verdict.
func (m *Mutation) Warn(warning string) *Mutation {
	m.Verdict.Warn(warning)
	return m
}

// PatchOperation is one operation of a JSON Patch (RFC 6902).
type PatchOperation struct {
	// Op is add, remove, replace, move, copy or test.
	Op string
	// Path is a JSON Pointer (see JSONPointer).
	Path string
	// From is the source of move and copy.
	From string
	// Value is the value of add, replace and test (nil is JSON null).
	Value any
}

// PatchAdd adds value at path (to an object's member, or into an array).
func PatchAdd(path string, value any) PatchOperation {
	return PatchOperation{Op: "add", Path: path, Value: value}
}

// PatchReplace replaces the value at path, which must exist.
func PatchReplace(path string, value any) PatchOperation {
	return PatchOperation{Op: "replace", Path: path, Value: value}
}

// PatchRemove removes the value at path, which must exist.
func PatchRemove(path string) PatchOperation {
	return PatchOperation{Op: "remove", Path: path}
}

// MarshalJSON writes the members the operation has: `value` for add,
// replace and test (null included), `from` for move and copy.
func (o PatchOperation) MarshalJSON() ([]byte, error) {
	type withValue struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	type withFrom struct {
		Op   string `json:"op"`
		From string `json:"from"`
		Path string `json:"path"`
	}
	type bare struct {
		Op   string `json:"op"`
		Path string `json:"path"`
	}
	switch o.Op {
	case "add", "replace", "test":
		return json.Marshal(withValue{o.Op, o.Path, o.Value})
	case "move", "copy":
		return json.Marshal(withFrom{o.Op, o.From, o.Path})
	}
	return json.Marshal(bare{o.Op, o.Path})
}

// JSONPointer joins reference tokens into a JSON Pointer (RFC 6901),
// escaping `~` and `/`: JSONPointer("metadata", "labels",
// "app.kubernetes.io/name") is `/metadata/labels/app.kubernetes.io~1name`.
func JSONPointer(tokens ...string) string {
	var b strings.Builder
	escape := strings.NewReplacer("~", "~0", "/", "~1")
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escape.Replace(t))
	}
	return b.String()
}

// ---- what the component's admission exports answer (export_wasip1.go) ----

// declaredWebhooks is what h admits, as `admission.declare` answers it:
// its manifest's webhooks, none by default. A webhook whose method h lacks
// is logged when the plugin is loaded (and each review of it fails, saying
// so).
func declaredWebhooks(h Handler) (validating, mutating *Webhook) {
	m := h.Manifest()
	if _, ok := h.(Validator); !ok && m.ValidatingWebhook != nil {
		slog.Error(noMethod(h, "validating", "Validate", true).Error())
	}
	if _, ok := h.(Mutator); !ok && m.MutatingWebhook != nil {
		slog.Error(noMethod(h, "mutating", "Mutate", true).Error())
	}
	return m.ValidatingWebhook, m.MutatingWebhook
}

// validate answers `admission.validate`: h's verdict, or the fault (an
// error, a panic, no verdict, no Validate method) that the host answers by
// the failure policy.
func validate(h Handler, review *AdmissionReview) (verdict *Verdict, err error) {
	validator, ok := h.(Validator)
	if !ok {
		return nil, noMethod(h, "validating", "Validate", h.Manifest().ValidatingWebhook != nil)
	}
	defer recoverFault("Validate", &err)
	verdict, err = validator.Validate(review)
	if err == nil && verdict == nil {
		err = errors.New("Validate returned neither a verdict nor an error")
	}
	return verdict, err
}

// mutate answers `admission.mutate`, as validate.
func mutate(h Handler, review *AdmissionReview) (mutation *Mutation, err error) {
	mutator, ok := h.(Mutator)
	if !ok {
		return nil, noMethod(h, "mutating", "Mutate", h.Manifest().MutatingWebhook != nil)
	}
	defer recoverFault("Mutate", &err)
	mutation, err = mutator.Mutate(review)
	if err == nil && mutation == nil {
		err = errors.New("Mutate returned neither a mutation nor an error")
	}
	return mutation, err
}

// noMethod is why h, which has no method, cannot decide for its webhook:
// a manifest that declares the webhook without the method, or a plugin
// that does not admit at all.
func noMethod(h Handler, webhook, method string, declared bool) error {
	if declared {
		return fmt.Errorf("the manifest declares a %s webhook, but %T has no %s method", webhook, h, method)
	}
	return fmt.Errorf("the plugin does not admit: %T has no %s method and declares no %s webhook", h, method, webhook)
}

// recoverFault turns a panic of method into *err: a panic in an admission
// call is a fault the failure policy answers, not a trap.
func recoverFault(method string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s panicked: %v", method, r)
	}
}

// errorText is err as the WIT's error string: its message, or its type
// when the message is empty.
func errorText(err error) string {
	if msg := err.Error(); msg != "" {
		return msg
	}
	return fmt.Sprintf("%T", err)
}
