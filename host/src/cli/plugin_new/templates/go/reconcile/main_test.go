package main

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	herald "herald.dev/sdk/go"
	"herald.dev/sdk/go/heraldtest"
)

func deployment(image string) *appsv1.Deployment {
	replicas := int32(2)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}}},
		},
	}
}

// The controller, run natively against the SDK's stand-in host.
func TestKeepsAnOwnedSummaryAndLooksAgainLater(t *testing.T) {
	h := heraldtest.New(t)
	plugin := Controller()
	h.Declare(plugin.Manifest())
	h.Cache(deployment("nginx:1.28"))
	// The notification may be older than the cache: the cache's state wins.
	if err := plugin.OnAdd(heraldtest.Added(t, deployment("nginx:1.27"))); err != nil {
		t.Fatal(err)
	}
	writes := h.TakeWrites()
	if len(writes) != 1 || writes[0].Verb != herald.VerbApply || writes[0].Key() != "shop/web-summary" {
		t.Fatalf("writes %+v, want one apply of shop/web-summary", writes)
	}
	var summary corev1.ConfigMap
	if err := writes[0].Decode(&summary); err != nil {
		t.Fatal(err)
	}
	if summary.OwnerReferences[0].UID != "uid-web" || summary.Data["images"] != "nginx:1.28" || summary.Data["replicas"] != "2" {
		t.Fatalf("summary %+v", summary)
	}
	if got := h.TakeRequeues(); !slices.Equal(got, []time.Duration{10 * time.Minute}) {
		t.Fatalf("requeues %v", got)
	}
	if got := h.TakeMessages(); !slices.Equal(got, []string{"summarized deployment=shop/web images=nginx:1.28 replicas=2"}) {
		t.Fatalf("logged %q", got)
	}

	h.Uncache(herald.KindOf[appsv1.Deployment](), "shop", "web")
	if err := plugin.OnDelete(heraldtest.Deleted(t, deployment("nginx:1.28"))); err != nil {
		t.Fatal(err)
	}
	if got := h.TakeWrites(); len(got) != 0 {
		t.Fatalf("a gone Deployment wrote %+v", got)
	}
	if got := h.TakeMessages(); !slices.Equal(got, []string{"gone deployment=shop/web"}) {
		t.Fatalf("logged %q", got)
	}
}
