package main

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"herald.dev/sdk/go/heraldtest"
)

func pod(phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop"},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

// The handlers, run natively against the SDK's stand-in host.
func TestLogsAddsPhaseChangesAndDeletions(t *testing.T) {
	h := heraldtest.New(t)
	p := &Plugin{}
	steps := []error{
		p.OnAdd(heraldtest.Added(t, pod(corev1.PodPending))),
		p.OnUpdate(heraldtest.Updated(t, pod(corev1.PodPending), pod(corev1.PodRunning))),
		p.OnUpdate(heraldtest.Updated(t, pod(corev1.PodRunning), pod(corev1.PodRunning))),
		p.OnDelete(heraldtest.Deleted(t, pod(corev1.PodRunning))),
	}
	for i, err := range steps {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	want := []string{
		"added pod=shop/web-0 phase=Pending",
		"phase pod=shop/web-0 from=Pending to=Running",
		"deleted pod=shop/web-0",
	}
	if got := h.Messages(); !slices.Equal(got, want) {
		t.Fatalf("logged %q, want %q", got, want)
	}
}
