// Package cache reads the host's informer caches (a lister): only the
// kinds the plugin subscribed to, within the subscriptions' namespaces and
// selectors, and the indexes its manifest declared.
//
//	rs, err := cache.Get[appsv1.ReplicaSet]("shop", "web-5d9f")  // nil if not cached
//	pods, err := cache.List[corev1.Pod]("shop", "app=web")
//	onNode, err := cache.ByIndex[corev1.Pod]("by-node", "node-1", "")
package cache

import (
	"encoding/json"
	"fmt"
	"reflect"

	herald "herald.dev/sdk/go"
	"herald.dev/sdk/go/internal/host"
)

// Error is why a look-up could not be answered: not subscribed to the
// kind, an invalid label selector, or an index the manifest does not
// declare.
type Error = host.CacheError

// GetRaw is the cached object namespace/name of kind as JSON text (an
// empty namespace for cluster-scoped kinds); false if it is not cached.
func GetRaw(kind herald.GroupVersionKind, namespace, name string) (string, bool, error) {
	return host.Get().CacheGet(kind, namespace, name)
}

// ListRaw is every cached object of kind, only in namespace unless it is
// "", only those matching labelSelector unless it is "", as JSON texts.
func ListRaw(kind herald.GroupVersionKind, namespace, labelSelector string) ([]string, error) {
	return host.Get().CacheList(kind, namespace, labelSelector)
}

// ByIndexRaw is the cached objects the manifest's index name files under
// value, only in namespace unless it is "", as JSON texts sorted by key.
func ByIndexRaw(name, value, namespace string) ([]string, error) {
	return host.Get().IndexLookup(name, value, namespace)
}

// Get is the cached object of type T (see herald.KindOf); nil if it is
// not cached.
func Get[T any](namespace, name string) (*T, error) {
	text, ok, err := GetRaw(herald.KindOf[T](), namespace, name)
	if err != nil || !ok {
		return nil, err
	}
	return decode[T](text)
}

// List is every cached object of type T in namespace ("" for all) matching
// labelSelector ("" for all).
func List[T any](namespace, labelSelector string) ([]T, error) {
	texts, err := ListRaw(herald.KindOf[T](), namespace, labelSelector)
	if err != nil {
		return nil, err
	}
	return decodeAll[T](texts)
}

// ByIndex is the cached objects the index name files under value.
func ByIndex[T any](name, value, namespace string) ([]T, error) {
	texts, err := ByIndexRaw(name, value, namespace)
	if err != nil {
		return nil, err
	}
	return decodeAll[T](texts)
}

func decode[T any](text string) (*T, error) {
	v := new(T)
	if err := json.Unmarshal([]byte(text), v); err != nil {
		return nil, fmt.Errorf("decoding a cached object as %s: %w", reflect.TypeFor[T](), err)
	}
	return v, nil
}

func decodeAll[T any](texts []string) ([]T, error) {
	out := make([]T, len(texts))
	for i, text := range texts {
		if err := json.Unmarshal([]byte(text), &out[i]); err != nil {
			return nil, fmt.Errorf("decoding a cached object as %s: %w", reflect.TypeFor[T](), err)
		}
	}
	return out, nil
}
