package herald

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// Context is what the host said about a notification.
type Context struct {
	// Kind is the subscription's kind.
	Kind GroupVersionKind
	// Resource is the plural resource name the kind resolved to (`pods`).
	Resource string
	// Key is `namespace/name`, or `name` when cluster-scoped.
	Key string
	// ResourceVersion is the (new) object's metadata.resourceVersion.
	ResourceVersion string
	// IsInitialList marks the synthetic adds replaying the cache to a
	// plugin that joined after the informer had synced.
	IsInitialList bool
	// IsResync marks periodic resync updates (old and new are equal).
	IsResync bool
	// FinalStateUnknown marks a delete inferred from a relist: the object
	// is its last known state.
	FinalStateUnknown bool
}

// Namespace is the namespace part of the key; "" when cluster-scoped.
func (c *Context) Namespace() string {
	ns, _, found := strings.Cut(c.Key, "/")
	if !found {
		return ""
	}
	return ns
}

// Name is the name part of the key.
func (c *Context) Name() string {
	_, name, found := strings.Cut(c.Key, "/")
	if !found {
		return c.Key
	}
	return name
}

// Event is an add (OnAdd) or delete (OnDelete) notification.
type Event struct {
	Context
	// JSON is the object as the host sent it.
	JSON string
}

// Object decodes the object into v (a pointer to a k8s.io/api type such as
// corev1.Pod, or to a struct with only the fields the handler reads) with
// encoding/json.
func (e *Event) Object(v any) error { return decode(e.JSON, v, "the object") }

// View reads the object lazily: metadata now, the rest when asked for.
func (e *Event) View() (*ObjectView, error) { return readView(e.JSON, "object") }

// Update is an update notification (OnUpdate): the old and new states,
// equal on a resync.
type Update struct {
	Context
	// OldJSON is the previous state as the host sent it; "" when the
	// handler's DeliveryOptions skip it (SkipOldState).
	OldJSON string
	// NewJSON is the new state as the host sent it.
	NewJSON string
}

// errNoOldState is what Old and OldView say of an update without its old
// state.
var errNoOldState = errors.New("the update carries no old state (the handler's DeliveryOptions skip it: SkipOldState)")

// Old decodes the previous state into v (see Event.Object); an error when
// the update carries none (DeliveryOptions.SkipOldState).
func (u *Update) Old(v any) error {
	if u.OldJSON == "" {
		return errNoOldState
	}
	return decode(u.OldJSON, v, "the old object")
}

// New decodes the new state into v (see Event.Object).
func (u *Update) New(v any) error { return decode(u.NewJSON, v, "the new object") }

// OldView reads the previous state lazily; an error when the update
// carries none (DeliveryOptions.SkipOldState).
func (u *Update) OldView() (*ObjectView, error) {
	if u.OldJSON == "" {
		return nil, errNoOldState
	}
	return readView(u.OldJSON, "old object")
}

// NewView reads the new state lazily.
func (u *Update) NewView() (*ObjectView, error) { return readView(u.NewJSON, "new object") }

// Decode decodes an event's object into a new T:
//
//	pod, err := herald.Decode[corev1.Pod](event)
func Decode[T any](e *Event) (*T, error) {
	v := new(T)
	if err := e.Object(v); err != nil {
		return nil, err
	}
	return v, nil
}

// DecodeUpdate decodes both states of an update into new Ts.
func DecodeUpdate[T any](u *Update) (old, new *T, err error) {
	old, new = new_[T](), new_[T]()
	if err := u.Old(old); err != nil {
		return nil, nil, err
	}
	if err := u.New(new); err != nil {
		return nil, nil, err
	}
	return old, new, nil
}

func new_[T any]() *T { return new(T) }

func decode(text string, v any, what string) error {
	if err := json.Unmarshal([]byte(text), v); err != nil {
		return fmt.Errorf("decoding %s as %s: %w", what, reflect.TypeOf(v).Elem(), err)
	}
	return nil
}
