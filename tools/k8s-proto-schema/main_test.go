package main

import (
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
