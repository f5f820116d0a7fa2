package main

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"herald.dev/sdk/go/events"
	"herald.dev/sdk/go/heraldtest"
)

func pod(phase corev1.PodPhase, restarts int32) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", UID: "uid-web-0", ResourceVersion: "10"},
		Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
		Status: corev1.PodStatus{
			Phase:             phase,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", RestartCount: restarts}},
		},
	}
}

func newPlugin(t *testing.T) (*PodPhases, *heraldtest.Host) {
	h := heraldtest.New(t)
	p := &PodPhases{}
	h.Declare(p.Manifest()) // metric updates are checked as the host checks them
	return p, h
}

func TestAddsAreLoggedAndPendingPodsRechecked(t *testing.T) {
	p, h := newPlugin(t)
	if err := p.OnAdd(heraldtest.InitialListed(t, pod(corev1.PodPending, 0))); err != nil {
		t.Fatal(err)
	}
	msgs := h.Messages()
	if len(msgs) != 1 || msgs[0] != "pod added pod=shop/web-0 phase=Pending node=node-1 initial=true" {
		t.Fatalf("log: %q", msgs)
	}
	if r := h.Requeues(); len(r) != 1 || r[0] != 30*time.Second {
		t.Fatalf("requeues: %v", r)
	}
	if v, _ := h.Metric("pods_seen"); v != 1 {
		t.Fatalf("pods_seen: %v", v)
	}
}

func TestPhaseChangesAreLoggedAndCounted(t *testing.T) {
	p, h := newPlugin(t)
	if err := p.OnUpdate(heraldtest.Updated(t, pod(corev1.PodPending, 0), pod(corev1.PodRunning, 0))); err != nil {
		t.Fatal(err)
	}
	if msgs := h.Messages(); len(msgs) != 1 || !strings.Contains(msgs[0], "from=Pending to=Running") {
		t.Fatalf("log: %q", msgs)
	}
	if v, _ := h.Metric("phase_changes_total", "Running"); v != 1 {
		t.Fatalf("phase_changes_total: %v", v)
	}
	if len(h.Requeues()) != 0 {
		t.Fatal("a running Pod is not rechecked")
	}
}

func TestRestartsAreCountedAndWarnedAboutOnce(t *testing.T) {
	p, h := newPlugin(t)
	h.SetConfig(map[string]any{"restartWarning": 2, "pendingRecheck": "0s"})
	steps := []int32{0, 1, 3, 4}
	for i := 1; i < len(steps); i++ {
		u := heraldtest.Updated(t, pod(corev1.PodRunning, steps[i-1]), pod(corev1.PodRunning, steps[i]))
		if err := p.OnUpdate(u); err != nil {
			t.Fatal(err)
		}
	}
	if v, _ := h.Metric("container_restarts_total", "shop"); v != 4 {
		t.Fatalf("container_restarts_total: %v", v)
	}
	ev := h.Events()
	if len(ev) != 1 || ev[0].Type != events.TypeWarning || ev[0].Reason != "RestartingContainer" ||
		ev[0].Regarding.Name != "web-0" || ev[0].Regarding.UID != "uid-web-0" || ev[0].Note != "container app restarted 3 times" {
		t.Fatalf("events: %+v", ev)
	}
	for _, u := range h.MetricUpdates() {
		if u.Dropped != "" {
			t.Fatalf("dropped metric update: %+v", u)
		}
	}
}

func TestARefusedEventFailsTheCall(t *testing.T) {
	p, h := newPlugin(t)
	h.RespondEvents(&events.Error{Kind: 0, Message: "events not granted"})
	err := p.OnUpdate(heraldtest.Updated(t, pod(corev1.PodRunning, 2), pod(corev1.PodRunning, 3)))
	if err == nil || !strings.Contains(err.Error(), "not-granted") {
		t.Fatalf("error: %v", err)
	}
}

func TestBadConfigurationFailsTheCall(t *testing.T) {
	p, h := newPlugin(t)
	h.SetConfig(`{"pendingRecheck": "soon"}`)
	if err := p.OnAdd(heraldtest.Added(t, pod(corev1.PodPending, 0))); err == nil || !strings.Contains(err.Error(), "pendingRecheck") {
		t.Fatalf("error: %v", err)
	}
}

func TestAnEventIsNotStartedWithTooLittleTimeLeft(t *testing.T) {
	p, h := newPlugin(t)
	h.SetDeadlineRemaining(30 * time.Millisecond)
	u := heraldtest.Updated(t, pod(corev1.PodRunning, 2), pod(corev1.PodRunning, 3))
	if err := p.OnUpdate(u); err == nil || !strings.Contains(err.Error(), "30ms left of the call") {
		t.Fatalf("error: %v", err)
	}
	if ev := h.Events(); len(ev) != 0 {
		t.Fatalf("events: %+v", ev)
	}
	h.SetDeadlineRemaining(time.Second) // the host's retry, with time to spare
	if err := p.OnUpdate(u); err != nil {
		t.Fatal(err)
	}
	if ev := h.Events(); len(ev) != 1 {
		t.Fatalf("events: %+v", ev)
	}
	if v, _ := h.Metric("container_restarts_total", "shop"); v != 1 {
		t.Fatalf("the failed call counted nothing: container_restarts_total %v", v)
	}
}
