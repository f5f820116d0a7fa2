package herald

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"herald.dev/sdk/go/internal/host"
)

// GroupVersionKind names a Kubernetes kind: `apps`/`v1`/`Deployment`; the
// core group is "".
type GroupVersionKind = host.GVK

// GVK is a GroupVersionKind from its parts.
func GVK(group, version, kind string) GroupVersionKind {
	return GroupVersionKind{Group: group, Version: version, Kind: kind}
}

// groups maps k8s.io/api's package directories to API group names.
var groups = map[string]string{
	"core":                  "",
	"apps":                  "apps",
	"batch":                 "batch",
	"autoscaling":           "autoscaling",
	"policy":                "policy",
	"networking":            "networking.k8s.io",
	"rbac":                  "rbac.authorization.k8s.io",
	"storage":               "storage.k8s.io",
	"admissionregistration": "admissionregistration.k8s.io",
	"apiserverinternal":     "internal.apiserver.k8s.io",
	"authentication":        "authentication.k8s.io",
	"authorization":         "authorization.k8s.io",
	"certificates":          "certificates.k8s.io",
	"coordination":          "coordination.k8s.io",
	"discovery":             "discovery.k8s.io",
	"events":                "events.k8s.io",
	"flowcontrol":           "flowcontrol.apiserver.k8s.io",
	"node":                  "node.k8s.io",
	"resource":              "resource.k8s.io",
	"scheduling":            "scheduling.k8s.io",
	"storagemigration":      "storagemigration.k8s.io",
	"imagepolicy":           "imagepolicy.k8s.io",
}

var (
	kindsMu sync.RWMutex
	kinds   = map[reflect.Type]GroupVersionKind{}
)

// RegisterKind tells the SDK the kind of Go type T (a CRD's type, say), for
// SubscriptionTo, WriteRuleFor, cache, kube and events. Types of
// k8s.io/api need no registration.
func RegisterKind[T any](kind GroupVersionKind) {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	kinds[reflect.TypeFor[T]()] = kind
}

// KindOf returns the kind of T: registered with RegisterKind, or read from
// the package path of a k8s.io/api type (k8s.io/api/apps/v1.Deployment is
// apps/v1/Deployment). It panics for any other type: that is a programming
// error, found by the first test that runs the code.
func KindOf[T any]() GroupVersionKind {
	k, ok := KindOfType(reflect.TypeFor[T]())
	if !ok {
		panic(fmt.Sprintf("herald: the kind of %s is unknown: register it with herald.RegisterKind", reflect.TypeFor[T]()))
	}
	return k
}

// KindOfType is KindOf for a reflect.Type (pointers are followed); false
// when the kind is unknown.
func KindOfType(t reflect.Type) (GroupVersionKind, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	kindsMu.RLock()
	k, ok := kinds[t]
	kindsMu.RUnlock()
	if ok {
		return k, true
	}
	return kindOfAPIType(t)
}

func kindOfAPIType(t reflect.Type) (GroupVersionKind, bool) {
	rest, ok := strings.CutPrefix(t.PkgPath(), "k8s.io/api/")
	if !ok {
		return GroupVersionKind{}, false
	}
	dir, version, ok := strings.Cut(rest, "/")
	group, known := groups[dir]
	if !ok || !known || strings.Contains(version, "/") {
		return GroupVersionKind{}, false
	}
	return GroupVersionKind{Group: group, Version: version, Kind: t.Name()}, true
}

// APIVersion is `group/version`, or `version` for the core group.
func APIVersion(k GroupVersionKind) string {
	if k.Group == "" {
		return k.Version
	}
	return k.Group + "/" + k.Version
}
