package main

import (
	"sort"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/scheme"
)

// field finds the field named name (or, with name "", the inline field of
// type typ) in message id.
func field(t *testing.T, s *Schema, id, name, typ string) Field {
	t.Helper()
	for _, f := range s.Messages[id] {
		if (name != "" && f.Name == name) || (name == "" && f.Inline && f.Type == typ) {
			return f
		}
	}
	t.Fatalf("%s has no field %q %s", id, name, typ)
	return Field{}
}

const (
	core = "k8s.io/api/core/v1."
	meta = "k8s.io/apimachinery/pkg/apis/meta/v1."
)

func TestTheSchemaDescribesWhatTheTranscoderReliesOn(t *testing.T) {
	s, err := Generate(scheme.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		id, name, typ string
		want          Field
	}{
		{core + "Pod", "metadata", "", Field{Name: "metadata", Number: 1, Type: "m:" + meta + "ObjectMeta", Omit: "empty"}},
		{core + "Pod", "", "m:" + meta + "TypeMeta", Field{Type: "m:" + meta + "TypeMeta", Inline: true}},
		{meta + "ObjectMeta", "creationTimestamp", "", Field{Name: "creationTimestamp", Number: 8, Type: "time", Omit: "empty+zero"}},
		{meta + "ObjectMeta", "labels", "", Field{Name: "labels", Number: 11, Type: "string", Container: "map", Omit: "empty"}},
		{core + "Secret", "data", "", Field{Name: "data", Number: 2, Type: "bytes", Container: "map", Omit: "empty"}},
		{core + "Container", "ports", "", Field{Name: "ports", Number: 6, Type: "m:" + core + "ContainerPort", Container: "list", Omit: "empty"}},
		{core + "ResourceRequirements", "limits", "", Field{Name: "limits", Number: 1, Type: "quantity", Container: "map", Omit: "empty"}},
		{core + "Volume", "", "m:" + core + "VolumeSource", Field{Number: 2, Type: "m:" + core + "VolumeSource", Inline: true}},
		{"k8s.io/api/apps/v1.RollingUpdateDeployment", "maxSurge", "", Field{Name: "maxSurge", Number: 2, Type: "intorstring", Pointer: true, Omit: "empty"}},
	} {
		if got := field(t, s, want.id, want.name, want.typ); got != want.want {
			t.Errorf("%s %s: got %+v, want %+v", want.id, want.name, got, want.want)
		}
	}
	kinds := map[[3]string]bool{}
	for _, k := range s.Kinds {
		kinds[[3]string{k.Group, k.Version, k.Kind}] = true
	}
	for _, k := range [][3]string{{"", "v1", "Pod"}, {"", "v1", "PodList"}, {"apps", "v1", "Deployment"}} {
		if !kinds[k] {
			t.Errorf("kind %v is missing", k)
		}
	}
	// UserInfo's extra is a map of ExtraValue, a message on the wire: the
	// kinds that reach it are left out rather than misread.
	if kinds[[3]string{"authentication.k8s.io", "v1", "TokenReview"}] {
		t.Error("TokenReview is listed although UserInfo.extra is not supported")
	}
}

// What a server's JSON can hold that its protobuf cannot: every field JSON
// writes has a protobuf number except an object's inline TypeMeta, which
// the envelope carries for the object answered but nothing carries for an
// object embedded in another. Outside list items (whose kind and
// apiVersion the server leaves empty), these are the only fields holding
// such an object. Their kind and apiVersion are whatever the server puts
// there: a StatefulSet's claim templates get both from the apps API's
// conversion on every read, which Herald's transcoder writes
// (FILLED_TYPE_META in host/src/informer/protobuf/mod.rs); an Eviction is
// never listed or watched. A new one must be decided on the same way.
func TestTheOnlyEmbeddedObjectsAreTheOnesTheTranscoderFillsOrNeverReads(t *testing.T) {
	s, err := Generate(scheme.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	typeMeta := "m:" + meta + "TypeMeta"
	objects := map[string]bool{}
	for id, fields := range s.Messages {
		for _, f := range fields {
			if f.Inline && f.Type == typeMeta {
				objects[id] = true
			}
			if f.Number == 0 && !(f.Inline && f.Type == typeMeta) {
				t.Errorf("%s.%s has no protobuf number, so no reader of protobuf sees it", id, f.Name)
			}
		}
	}
	var embedded []string
	for id, fields := range s.Messages {
		for _, f := range fields {
			if objects[strings.TrimPrefix(f.Type, "m:")] && !(f.Name == "items" && f.Container == "list") {
				embedded = append(embedded, id+"."+f.Name)
			}
		}
	}
	sort.Strings(embedded)
	want := []string{
		"k8s.io/api/apps/v1.StatefulSetSpec.volumeClaimTemplates",
		"k8s.io/api/apps/v1beta1.StatefulSetSpec.volumeClaimTemplates",
		"k8s.io/api/apps/v1beta2.StatefulSetSpec.volumeClaimTemplates",
		"k8s.io/api/policy/v1.Eviction.deleteOptions",
		"k8s.io/api/policy/v1beta1.Eviction.deleteOptions",
	}
	if strings.Join(embedded, "\n") != strings.Join(want, "\n") {
		t.Errorf("objects embedded in other objects:\n%s\nwant:\n%s", strings.Join(embedded, "\n"), strings.Join(want, "\n"))
	}
}
