package reconcile_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	herald "herald.dev/sdk/go"
	"herald.dev/sdk/go/heraldtest"
	"herald.dev/sdk/go/kube"
	"herald.dev/sdk/go/reconcile"
)

// seen records each reconcile: the request and the object it was given.
type seen struct {
	requests []reconcile.Request
	objects  []*appsv1.Deployment
	result   func(reconcile.Request) (reconcile.Result, error)
}

func (s *seen) Reconcile(req reconcile.Request, d *appsv1.Deployment) (reconcile.Result, error) {
	s.requests = append(s.requests, req)
	s.objects = append(s.objects, d)
	if s.result == nil {
		return reconcile.Result{}, nil
	}
	return s.result(req)
}

func deployment(namespace, name, resourceVersion string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespace, Name: name, ResourceVersion: resourceVersion,
	}}
}

func owned(namespace, name string, owner metav1.OwnerReference) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespace, Name: name, OwnerReferences: []metav1.OwnerReference{owner},
	}}
}

func controllerOf(apiVersion, kind, name string) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: "u", Controller: &yes}
}

// mounting maps a ConfigMap to the Deployments of its namespace named in
// its `used-by` label.
func mounting(cm *herald.ObjectView) []reconcile.Request {
	var out []reconcile.Request
	for _, name := range strings.Split(cm.Metadata.Labels["used-by"], ".") {
		out = append(out, reconcile.Request{Namespace: cm.Metadata.Namespace, Name: name})
	}
	return out
}

func controller(r reconcile.Reconciler[appsv1.Deployment]) herald.Handler {
	return reconcile.For[appsv1.Deployment](herald.NewManifest("rollouts", "0.1.0")).
		Owns(herald.KindOf[appsv1.ReplicaSet]()).
		Watches(herald.KindOf[corev1.ConfigMap](), mounting).
		Complete(r)
}

func TestEveryKindTheControllerNamesIsSubscribedCoalesced(t *testing.T) {
	m := controller(&seen{}).Manifest()
	var kinds []string
	for _, s := range m.Subscriptions {
		if s.Delivery != herald.Coalesced {
			t.Errorf("%s is delivered %s, not coalesced", s.Kind, s.Delivery)
		}
		kinds = append(kinds, s.Kind.Kind)
	}
	if want := []string{"Deployment", "ReplicaSet", "ConfigMap"}; !slices.Equal(kinds, want) {
		t.Fatalf("subscriptions %v, want %v", kinds, want)
	}
}

func TestAPrimaryNotificationReconcilesItsKeyAgainstTheCachesCurrentState(t *testing.T) {
	h := heraldtest.New(t)
	s := &seen{}
	handler := controller(s)
	// The cache is newer than the notification, as it is when a burst of
	// changes was coalesced.
	h.Cache(deployment("shop", "web", "7"))
	if err := handler.OnAdd(heraldtest.Added(t, deployment("shop", "web", "5"))); err != nil {
		t.Fatal(err)
	}
	if want := []reconcile.Request{{Namespace: "shop", Name: "web"}}; !slices.Equal(s.requests, want) {
		t.Fatalf("reconciled %v, want %v", s.requests, want)
	}
	if got := s.objects[0].ResourceVersion; got != "7" {
		t.Fatalf("reconciled resourceVersion %q, want the cache's 7", got)
	}
	if got := h.Requeues(); len(got) != 0 {
		t.Fatalf("a done reconcile requeued %v", got)
	}
}

func TestAnObjectGoneFromTheCacheIsReconciledAsNil(t *testing.T) {
	heraldtest.New(t)
	s := &seen{}
	if err := controller(s).OnDelete(heraldtest.Deleted(t, deployment("shop", "web", "9"))); err != nil {
		t.Fatal(err)
	}
	if len(s.objects) != 1 || s.objects[0] != nil {
		t.Fatalf("reconciled %v, want one reconcile of nil", s.objects)
	}
}

func TestAnOwnedObjectReconcilesItsControllerOwnerOnly(t *testing.T) {
	h := heraldtest.New(t)
	s := &seen{}
	handler := controller(s)
	h.Cache(deployment("shop", "web", "3"))
	notOwned := []*appsv1.ReplicaSet{
		owned("shop", "a", controllerOf("apps/v1", "StatefulSet", "db")),
		owned("shop", "b", controllerOf("example.com/v1", "Deployment", "web")),
		owned("shop", "c", metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "u"}),
		{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "d"}},
	}
	for _, rs := range notOwned {
		if err := handler.OnAdd(heraldtest.Added(t, rs)); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.requests) != 0 {
		t.Fatalf("objects the primary does not control reconciled %v", s.requests)
	}
	rs := owned("shop", "web-5d9f", controllerOf("apps/v1", "Deployment", "web"))
	if err := handler.OnUpdate(heraldtest.Updated(t, rs, rs)); err != nil {
		t.Fatal(err)
	}
	if want := []reconcile.Request{{Namespace: "shop", Name: "web"}}; !slices.Equal(s.requests, want) {
		t.Fatalf("reconciled %v, want %v", s.requests, want)
	}
}

func TestAClusterScopedPrimaryIsLookedUpWithoutTheOwnedObjectsNamespace(t *testing.T) {
	heraldtest.New(t)
	var got []reconcile.Request
	handler := reconcile.For[corev1.Namespace](herald.NewManifest("ns", "0.1.0")).
		ClusterScoped().
		Owns(herald.KindOf[corev1.ConfigMap]()).
		Complete(reconcile.Func[corev1.Namespace](func(req reconcile.Request, _ *corev1.Namespace) (reconcile.Result, error) {
			got = append(got, req)
			return reconcile.Result{}, nil
		}))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: "shop", Name: "marker", OwnerReferences: []metav1.OwnerReference{controllerOf("v1", "Namespace", "shop")},
	}}
	if err := handler.OnAdd(heraldtest.Added(t, cm)); err != nil {
		t.Fatal(err)
	}
	if want := []reconcile.Request{{Name: "shop"}}; !slices.Equal(got, want) {
		t.Fatalf("reconciled %v, want %v", got, want)
	}
}

func TestAWatchedObjectReconcilesWhatItsMapReturnsAndTheSoonestRequeueWins(t *testing.T) {
	h := heraldtest.New(t)
	delays := map[string]time.Duration{"web": time.Minute, "api": 10 * time.Second, "jobs": 0}
	s := &seen{result: func(req reconcile.Request) (reconcile.Result, error) {
		return reconcile.Result{RequeueAfter: delays[req.Name]}, nil
	}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: "shop", Name: "settings", Labels: map[string]string{"used-by": "web.api.jobs"},
	}}
	if err := controller(s).OnAdd(heraldtest.Added(t, cm)); err != nil {
		t.Fatal(err)
	}
	want := []reconcile.Request{{"shop", "web"}, {"shop", "api"}, {"shop", "jobs"}}
	if !slices.Equal(s.requests, want) {
		t.Fatalf("reconciled %v, want %v", s.requests, want)
	}
	if got := h.Requeues(); !slices.Equal(got, []time.Duration{10 * time.Second}) {
		t.Fatalf("requeues %v, want the soonest, 10s", got)
	}
}

func TestAFailedKeyIsReportedAfterEveryOtherKeyIsTriedAndNothingIsRequeued(t *testing.T) {
	h := heraldtest.New(t)
	s := &seen{result: func(req reconcile.Request) (reconcile.Result, error) {
		if req.Name == "web" {
			return reconcile.Result{}, errors.New("quota exceeded")
		}
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: "shop", Name: "settings", Labels: map[string]string{"used-by": "web.api"},
	}}
	err := controller(s).OnAdd(heraldtest.Added(t, cm))
	if err == nil || !strings.Contains(err.Error(), "reconciling shop/web: quota exceeded") {
		t.Fatalf("error %v, want the failed key named", err)
	}
	if len(s.requests) != 2 {
		t.Fatalf("reconciled %v, want both keys tried", s.requests)
	}
	if got := h.Requeues(); len(got) != 0 {
		t.Fatalf("a failed notification also requeued %v (the host's backoff retries it)", got)
	}
}

func TestANegativeRequeueIsAnErrorNamingTheKey(t *testing.T) {
	heraldtest.New(t)
	s := &seen{result: func(reconcile.Request) (reconcile.Result, error) {
		return reconcile.Result{RequeueAfter: -time.Second}, nil
	}}
	err := controller(s).OnAdd(heraldtest.Added(t, deployment("shop", "web", "1")))
	if err == nil || !strings.Contains(err.Error(), "shop/web") || !strings.Contains(err.Error(), "negative") {
		t.Fatalf("error %v, want a negative RequeueAfter refused", err)
	}
}

func TestANotificationOfAKindTheControllerDoesNotNameIsAnError(t *testing.T) {
	heraldtest.New(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0"}}
	err := controller(&seen{}).OnAdd(heraldtest.Added(t, pod))
	if err == nil || !strings.Contains(err.Error(), "Pod") {
		t.Fatalf("error %v, want the unknown kind named", err)
	}
}

// finalized runs Finalizer over d, recording which branch ran.
func finalized(t *testing.T, d *appsv1.Deployment, cleanupErr error) (string, reconcile.Result, error) {
	t.Helper()
	ran := ""
	result, err := reconcile.Finalizer(d, "example.com/cleanup",
		func(*appsv1.Deployment) (reconcile.Result, error) {
			ran = "apply"
			return reconcile.Result{RequeueAfter: time.Minute}, nil
		},
		func(*appsv1.Deployment) (reconcile.Result, error) {
			ran = "cleanup"
			return reconcile.Result{}, cleanupErr
		})
	return ran, result, err
}

func patched(t *testing.T, h *heraldtest.Host) map[string]any {
	t.Helper()
	writes := h.TakeWrites()
	if len(writes) != 1 || writes[0].Verb != herald.VerbPatch || writes[0].Key() != "shop/web" || writes[0].PatchType != "merge" {
		t.Fatalf("writes %+v, want one merge patch of shop/web", writes)
	}
	var body struct {
		Metadata map[string]any `json:"metadata"`
	}
	if err := writes[0].Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.Metadata
}

func TestAFinalizerIsAddedThenAppliedThenCleanedUpAndRemoved(t *testing.T) {
	h := heraldtest.New(t)
	d := deployment("shop", "web", "4")
	d.Finalizers = []string{"other"}
	ran, _, err := finalized(t, d, nil)
	if err != nil || ran != "" {
		t.Fatalf("first reconcile ran %q (%v), want only the finalizer added", ran, err)
	}
	meta := patched(t, h)
	if got := meta["finalizers"]; !reflectEqual(got, []any{"other", "example.com/cleanup"}) || meta["resourceVersion"] != "4" {
		t.Fatalf("patched %v, want the finalizer added at resourceVersion 4", meta)
	}

	d.Finalizers, d.ResourceVersion = []string{"other", "example.com/cleanup"}, "5"
	ran, result, err := finalized(t, d, nil)
	if err != nil || ran != "apply" || result.RequeueAfter != time.Minute || len(h.TakeWrites()) != 0 {
		t.Fatalf("live object with the finalizer: ran %q, %v, %v; want apply's result and no write", ran, result, err)
	}

	now := metav1.Now()
	d.DeletionTimestamp, d.ResourceVersion = &now, "6"
	if ran, _, err = finalized(t, d, errors.New("bucket busy")); err == nil || ran != "cleanup" || len(h.TakeWrites()) != 0 {
		t.Fatalf("a failed cleanup: ran %q, %v; want its error and the finalizer kept", ran, err)
	}
	if ran, _, err = finalized(t, d, nil); err != nil || ran != "cleanup" {
		t.Fatalf("cleanup ran %q, %v", ran, err)
	}
	if got := patched(t, h)["finalizers"]; !reflectEqual(got, []any{"other"}) {
		t.Fatalf("finalizers after cleanup %v, want only the other one", got)
	}

	d.Finalizers, d.ResourceVersion = []string{"other"}, "7"
	if ran, _, err = finalized(t, d, nil); err != nil || ran != "" || len(h.TakeWrites()) != 0 {
		t.Fatalf("deleting without the finalizer ran %q, %v; want nothing", ran, err)
	}
}

func TestAStateTheInstanceAlreadyWroteItsFinalizerChangeAtIsLeftAlone(t *testing.T) {
	h := heraldtest.New(t)
	d := deployment("shop", "stale", "20")
	now := metav1.Now()
	d.DeletionTimestamp, d.Finalizers = &now, []string{"example.com/cleanup"}
	if ran, _, err := finalized(t, d, nil); err != nil || ran != "cleanup" || len(h.TakeWrites()) != 1 {
		t.Fatalf("first cleanup: ran %q, %v", ran, err)
	}
	// The same, stale state again (another notification mapped here before
	// the cache saw the write): no second cleanup, no write.
	if ran, _, err := finalized(t, d, nil); err != nil || ran != "" || len(h.TakeWrites()) != 0 {
		t.Fatalf("the stale state: ran %q, %v; want nothing", ran, err)
	}
	live := deployment("shop", "stale-add", "30")
	if _, _, err := finalized(t, live, nil); err != nil || len(h.TakeWrites()) != 1 {
		t.Fatalf("add: %v", err)
	}
	if ran, _, err := finalized(t, live, nil); err != nil || ran != "" || len(h.TakeWrites()) != 0 {
		t.Fatalf("the stale state after the add: ran %q, %v; want nothing", ran, err)
	}
	live.Finalizers, live.ResourceVersion = []string{"example.com/cleanup"}, "31"
	if ran, _, err := finalized(t, live, nil); err != nil || ran != "apply" {
		t.Fatalf("a newer state: ran %q, %v; want apply", ran, err)
	}
}

func TestACleanupThatSucceededIsNotRunAgainWhenTheRemovalConflicts(t *testing.T) {
	h := heraldtest.New(t)
	d := deployment("shop", "web", "40")
	now := metav1.Now()
	d.UID, d.DeletionTimestamp, d.Finalizers = "0b5e-web", &now, []string{"example.com/cleanup"}
	// A write that landed after the deletion makes the removal conflict...
	h.RespondOnce(herald.VerbPatch, "shop/web", &kube.Error{Kind: kube.Conflict, Message: "the object has been modified"})
	ran, _, err := finalized(t, d, nil)
	if !kube.IsConflict(err) || ran != "cleanup" || len(h.TakeWrites()) != 1 {
		t.Fatalf("first attempt: ran %q, %v; want the cleanup, then the removal's conflict", ran, err)
	}
	// ...and the retry, at the newer state, only removes the finalizer.
	d.ResourceVersion = "41"
	if ran, _, err = finalized(t, d, nil); err != nil || ran != "" {
		t.Fatalf("the retry ran %q, %v; want only the finalizer removed", ran, err)
	}
	if got := patched(t, h)["finalizers"]; !reflectEqual(got, []any{}) {
		t.Fatalf("finalizers after the retry %#v, want []", got)
	}
	// A new object of the same name (another UID) is cleaned up as usual.
	d.UID, d.ResourceVersion = "7c1d-web", "50"
	if ran, _, err = finalized(t, d, nil); err != nil || ran != "cleanup" {
		t.Fatalf("a new object: ran %q, %v; want its cleanup", ran, err)
	}
}

func TestTheLastFinalizerRemovedIsAnEmptyListNotNull(t *testing.T) {
	h := heraldtest.New(t)
	d := deployment("shop", "web", "8")
	now := metav1.Now()
	d.DeletionTimestamp, d.Finalizers = &now, []string{"example.com/cleanup"}
	if _, _, err := finalized(t, d, nil); err != nil {
		t.Fatal(err)
	}
	if got := patched(t, h)["finalizers"]; !reflectEqual(got, []any{}) {
		t.Fatalf("finalizers %#v, want []", got)
	}
}

func TestAFinalizerWriteRefusedNamesTheFinalizer(t *testing.T) {
	h := heraldtest.New(t)
	h.Respond(herald.VerbPatch, "shop/web", &kube.Error{Kind: kube.NotGranted, Message: "patch apps/Deployment is not granted"})
	_, _, err := finalized(t, deployment("shop", "web", "1"), nil)
	if !kube.IsNotGranted(err) || !strings.Contains(err.Error(), "adding finalizer example.com/cleanup") {
		t.Fatalf("error %v, want NotGranted naming the finalizer", err)
	}
}

func reflectEqual(got any, want []any) bool {
	list, ok := got.([]any)
	return ok && slices.Equal(list, want)
}

func at(generation int64, resourceVersion string) *appsv1.Deployment {
	d := deployment("shop", "web", resourceVersion)
	d.Generation = generation
	return d
}

func TestGenerationChangedReconcilesSpecChangesRequeuesAndOtherKindsOnly(t *testing.T) {
	h := heraldtest.New(t)
	s := &seen{}
	handler := reconcile.For[appsv1.Deployment](herald.NewManifest("rollouts", "0.1.0")).
		GenerationChanged().
		Owns(herald.KindOf[appsv1.ReplicaSet]()).
		Complete(s)
	h.Cache(at(2, "12"))
	// A status change (same generation, newer resourceVersion), a resync.
	for _, u := range []*herald.Update{heraldtest.Updated(t, at(1, "10"), at(1, "11")), heraldtest.Resynced(t, at(1, "11"))} {
		if err := handler.OnUpdate(u); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.requests) != 0 {
		t.Fatalf("reconciled %v for updates that left the generation alone", s.requests)
	}
	// A spec change, a requeue (the same state again), an owned object.
	rs := owned("shop", "web-1", controllerOf("apps/v1", "Deployment", "web"))
	for _, u := range []*herald.Update{
		heraldtest.Updated(t, at(1, "11"), at(2, "12")),
		heraldtest.Updated(t, at(2, "12"), at(2, "12")),
		heraldtest.Updated(t, rs, rs),
	} {
		if err := handler.OnUpdate(u); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.requests) != 3 {
		t.Fatalf("reconciled %v, want the spec change, the requeue and the owned object's", s.requests)
	}
}
