package main

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"herald.dev/sdk/go/heraldtest"
)

func pod(image string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
	}
}

// The policy, run natively on the reviews the API server would send.
func TestRefusesUnpinnedImagesAndAllowsPinnedOnes(t *testing.T) {
	heraldtest.New(t) // the stand-in host, should the policy log or read the cache
	p := &Plugin{}
	for _, image := range []string{"shop/web:1.4.2", "registry:5000/web:2", "web@sha256:0123abcd"} {
		verdict, err := p.Validate(heraldtest.Creating(t, pod(image)))
		if err != nil || !verdict.Allowed {
			t.Errorf("%s: %+v %v", image, verdict, err)
		}
	}
	for _, image := range []string{"shop/web", "shop/web:latest", "registry:5000/web"} {
		verdict, err := p.Validate(heraldtest.Creating(t, pod(image)))
		if err != nil || verdict.Allowed || !strings.HasSuffix(verdict.Message, ": "+image) {
			t.Errorf("%s was not refused by name: %+v %v", image, verdict, err)
		}
	}
	verdict, err := p.Validate(heraldtest.Updating(t, pod("web:1"), pod("web:latest")))
	if err != nil || verdict.Allowed {
		t.Errorf("an update to :latest: %+v %v", verdict, err)
	}
	initContainer := pod("web:1")
	initContainer.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox"}}
	verdict, err = p.Validate(heraldtest.Creating(t, initContainer))
	if err != nil || verdict.Allowed || !strings.HasSuffix(verdict.Message, ": busybox") {
		t.Errorf("an unpinned init container: %+v %v", verdict, err)
	}
}
