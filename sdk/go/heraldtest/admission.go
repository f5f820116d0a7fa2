package heraldtest

import (
	"testing"

	herald "herald.dev/sdk/go"
)

// Creating is the review the API server sends when obj (a k8s.io/api
// value, or JSON text) is created, by user `admin`: for a plugin's Validate
// and Mutate. The resource is a naive plural of the kind, as Added's.
func Creating(t testing.TB, obj any) *herald.AdmissionReview {
	t.Helper()
	return review(herald.OperationCreate, obj, nil, "CreateOptions")
}

// Updating is the review of an update from old to new.
func Updating(t testing.TB, old, new any) *herald.AdmissionReview {
	t.Helper()
	return review(herald.OperationUpdate, new, old, "UpdateOptions")
}

// Deleting is the review of the deletion of obj: it carries only the old
// object.
func Deleting(t testing.TB, obj any) *herald.AdmissionReview {
	t.Helper()
	return review(herald.OperationDelete, nil, obj, "DeleteOptions")
}

// review is the review of operation: object is the object as it would be
// stored (nil on a delete), old as it is stored (nil on a create).
func review(operation herald.Operation, object, old any, options string) *herald.AdmissionReview {
	r := &herald.AdmissionReview{
		UID:         "00000000-0000-0000-0000-000000000001",
		Operation:   operation,
		UserInfo:    herald.UserInfo{Username: "admin", Groups: []string{"system:masters", "system:authenticated"}},
		OptionsJSON: `{"apiVersion":"meta.k8s.io/v1","kind":"` + options + `"}`,
	}
	var key objectKey
	if old != nil {
		r.OldObjectJSON, key = objectJSON(old)
	}
	if object != nil {
		r.ObjectJSON, key = objectJSON(object)
	}
	r.Kind, r.Namespace, r.Name = key.kind, key.namespace, key.name
	r.Resource = resourceOf(key.kind)
	return r
}
