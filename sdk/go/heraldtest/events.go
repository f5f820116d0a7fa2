package heraldtest

import (
	"strings"
	"testing"

	herald "herald.dev/sdk/go"
)

func context(t testing.TB, obj any) (herald.Context, string) {
	t.Helper()
	text, key := objectJSON(obj)
	k := key.name
	if key.namespace != "" {
		k = key.namespace + "/" + key.name
	}
	rv := ""
	if v, err := herald.ParseView(text); err == nil {
		rv = v.Metadata.ResourceVersion
	}
	return herald.Context{
		Kind:            key.kind,
		Resource:        resourceOf(key.kind),
		Key:             k,
		ResourceVersion: rv,
	}, text
}

// resourceOf is a naive plural of kind's name: `pods` for Pod.
func resourceOf(kind herald.GroupVersionKind) string { return strings.ToLower(kind.Kind) + "s" }

// Added is the notification of obj being added (a k8s.io/api value, or
// JSON text), as the host would send it. The resource is a naive plural of
// the kind.
func Added(t testing.TB, obj any) *herald.Event {
	t.Helper()
	ctx, text := context(t, obj)
	return &herald.Event{Context: ctx, JSON: text}
}

// InitialListed is Added with IsInitialList set.
func InitialListed(t testing.TB, obj any) *herald.Event {
	t.Helper()
	e := Added(t, obj)
	e.IsInitialList = true
	return e
}

// Updated is the notification of old becoming new.
func Updated(t testing.TB, old, new any) *herald.Update {
	t.Helper()
	ctx, newText := context(t, new)
	oldText, _ := objectJSON(old)
	return &herald.Update{Context: ctx, OldJSON: oldText, NewJSON: newText}
}

// Resynced is a periodic resync of obj: old and new are the same.
func Resynced(t testing.TB, obj any) *herald.Update {
	t.Helper()
	u := Updated(t, obj, obj)
	u.IsResync = true
	return u
}

// Deleted is the notification of obj being deleted.
func Deleted(t testing.TB, obj any) *herald.Event {
	t.Helper()
	return Added(t, obj)
}

// DeletedFinalStateUnknown is a delete inferred from a relist.
func DeletedFinalStateUnknown(t testing.TB, obj any) *herald.Event {
	t.Helper()
	e := Added(t, obj)
	e.FinalStateUnknown = true
	return e
}
