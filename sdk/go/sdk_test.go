package herald_test

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	herald "herald.dev/sdk/go"
	"herald.dev/sdk/go/cache"
	"herald.dev/sdk/go/config"
	"herald.dev/sdk/go/deadline"
	"herald.dev/sdk/go/events"
	"herald.dev/sdk/go/heraldtest"
	"herald.dev/sdk/go/kube"
	"herald.dev/sdk/go/metrics"
	"herald.dev/sdk/go/wasihttp"
	"herald.dev/sdk/go/workqueue"
)

func pod(name string, labels map[string]string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name), ResourceVersion: "7", Labels: labels},
		Spec:       corev1.PodSpec{NodeName: "node-1"},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func TestKindsAreReadFromK8sAPIPackagePaths(t *testing.T) {
	cases := map[herald.GroupVersionKind]herald.GroupVersionKind{
		herald.KindOf[corev1.Pod]():                 herald.GVK("", "v1", "Pod"),
		herald.KindOf[*appsv1.Deployment]():         herald.GVK("apps", "v1", "Deployment"),
		herald.KindOf[networkingv1.NetworkPolicy](): herald.GVK("networking.k8s.io", "v1", "NetworkPolicy"),
	}
	for got, want := range cases {
		if got != want {
			t.Errorf("got %v, want %v", got, want)
		}
	}
	type Widget struct{}
	herald.RegisterKind[Widget](herald.GVK("example.com", "v1", "Widget"))
	if k := herald.KindOf[Widget](); k.Group != "example.com" {
		t.Errorf("registered kind: %v", k)
	}
	if herald.APIVersion(herald.GVK("apps", "v1", "X")) != "apps/v1" || herald.APIVersion(herald.GVK("", "v1", "X")) != "v1" {
		t.Error("APIVersion")
	}
}

func TestManifestBuildersFillEveryField(t *testing.T) {
	m := herald.NewManifest("web-watch", "1.2.0").
		Subscribe(herald.SubscriptionTo[corev1.Pod]().InNamespace("web").Labels("app=web").Fields("spec.nodeName=n1")).
		Subscribe(herald.SubscriptionTo[appsv1.Deployment]().ResyncEvery(5*time.Minute).Coalesced()).
		SubscribeKind("example.com", "v1", "Widget").
		WithLimits(herald.Limits{CallDeadline: 500 * time.Millisecond}).
		Capability("events").
		Write(herald.WriteRuleFor[corev1.Pod]().Allow(herald.VerbPatch, herald.VerbPatch, herald.VerbGet).InNamespaces("shop").Status()).
		Metric(herald.CounterMetric("alerts_total", "Alerts").Labels("namespace")).
		Metric(herald.HistogramMetric("latency_seconds", "Latency").WithBuckets(0.1, 1)).
		Index(herald.IndexByField("by-node", herald.KindOf[corev1.Pod](), "spec.nodeName"))
	if len(m.Subscriptions) != 3 || m.Subscriptions[0].Namespace != "web" || m.Subscriptions[1].Delivery != herald.Coalesced {
		t.Fatalf("subscriptions: %+v", m.Subscriptions)
	}
	if w := m.Writes[0]; len(w.Verbs) != 2 || w.Subresource != "status" || w.Group != "" || w.Kind != "Pod" {
		t.Fatalf("write rule: %+v", w)
	}
	if v, err := herald.ParseVerb("Replace"); err != nil || v != herald.VerbUpdate {
		t.Fatalf("ParseVerb: %v %v", v, err)
	}
}

func TestEventsDecodeTypedAndLazily(t *testing.T) {
	heraldtest.New(t)
	e := heraldtest.Added(t, pod("web-0", map[string]string{"app": "web"}, corev1.PodRunning))
	if e.Namespace() != "shop" || e.Name() != "web-0" || e.Kind.Kind != "Pod" || e.ResourceVersion != "7" {
		t.Fatalf("context: %+v", e.Context)
	}
	p, err := herald.Decode[corev1.Pod](e)
	if err != nil || p.Spec.NodeName != "node-1" {
		t.Fatalf("decode: %v %+v", err, p)
	}
	v, err := e.View()
	if err != nil || v.Metadata.Labels["app"] != "web" || v.Kind != "Pod" || v.Metadata.UID != "uid-web-0" {
		t.Fatalf("view: %v %+v", err, v)
	}
	var status struct{ Phase string }
	if found, err := v.Status(&status); !found || err != nil || status.Phase != "Running" {
		t.Fatalf("status: %v %v %+v", found, err, status)
	}
	if found, _ := v.Field("data", &status); found {
		t.Fatal("a missing field is not found")
	}
	if !strings.Contains(v.Raw("spec"), "node-1") {
		t.Fatalf("raw spec: %q", v.Raw("spec"))
	}
	u := heraldtest.Updated(t, pod("web-0", nil, corev1.PodPending), pod("web-0", nil, corev1.PodRunning))
	oldPod, newPod, err := herald.DecodeUpdate[corev1.Pod](u)
	if err != nil || oldPod.Status.Phase != corev1.PodPending || newPod.Status.Phase != corev1.PodRunning {
		t.Fatalf("update: %v", err)
	}
	bad := &herald.Event{JSON: `{"metadata": 3}`}
	if _, err := bad.View(); err == nil || !strings.HasPrefix(err.Error(), "reading the object") {
		t.Fatalf("bad view: %v", err)
	}
	if _, err := herald.Decode[corev1.Pod](&herald.Event{JSON: `[]`}); err == nil || !strings.Contains(err.Error(), "v1.Pod") {
		t.Fatalf("bad decode: %v", err)
	}
}

func TestSlogReachesTheHostLog(t *testing.T) {
	h := heraldtest.New(t)
	slog.Info("phase changed", "pod", "shop/web-0", "to", "Running Now")
	slog.Debug("detail")
	herald.Logger().With("plugin", "x").WithGroup("g").Warn("careful", "n", 3)
	logs := h.Logs()
	if len(logs) != 3 {
		t.Fatalf("logs: %+v", logs)
	}
	if logs[0].Level != "info" || logs[0].Message != `phase changed pod=shop/web-0 to="Running Now"` {
		t.Errorf("line 0: %+v", logs[0])
	}
	if logs[1].Level != "debug" || logs[2].Level != "warn" || logs[2].Message != "careful plugin=x g.n=3" {
		t.Errorf("lines: %+v", logs)
	}
}

func TestConfigDecodesOverDefaults(t *testing.T) {
	h := heraldtest.New(t)
	settings := struct {
		Threshold int    `json:"threshold"`
		Channel   string `json:"channel"`
	}{Threshold: 3, Channel: "ops"}
	if found, err := config.Get(&settings); found || err != nil {
		t.Fatalf("no config: %v %v", found, err)
	}
	h.SetConfig(map[string]any{"threshold": 5})
	if found, err := config.Get(&settings); !found || err != nil || settings.Threshold != 5 || settings.Channel != "ops" {
		t.Fatalf("config: %v %v %+v", found, err, settings)
	}
}

func TestCacheServesListsSelectorsAndIndexes(t *testing.T) {
	h := heraldtest.New(t)
	h.Declare(herald.NewManifest("x", "1").Index(herald.IndexByLabel("by-app", herald.KindOf[corev1.Pod](), "app")))
	h.Cache(pod("web-0", map[string]string{"app": "web"}, ""), pod("web-1", map[string]string{"app": "web"}, ""), pod("db-0", map[string]string{"app": "db"}, ""))
	got, err := cache.Get[corev1.Pod]("shop", "web-1")
	if err != nil || got == nil || got.Name != "web-1" {
		t.Fatalf("get: %v %v", got, err)
	}
	if missing, err := cache.Get[corev1.Pod]("shop", "nope"); missing != nil || err != nil {
		t.Fatalf("missing: %v %v", missing, err)
	}
	web, err := cache.List[corev1.Pod]("shop", "app=web")
	if err != nil || len(web) != 2 || web[0].Name != "web-0" {
		t.Fatalf("list: %v %v", web, err)
	}
	notWeb, _ := cache.List[corev1.Pod]("", "app!=web")
	if len(notWeb) != 1 || notWeb[0].Name != "db-0" {
		t.Fatalf("list !=: %v", notWeb)
	}
	byApp, err := cache.ByIndex[corev1.Pod]("by-app", "db", "")
	if err != nil || len(byApp) != 1 {
		t.Fatalf("index: %v %v", byApp, err)
	}
	var cerr *cache.Error
	if _, err := cache.ByIndexRaw("nope", "x", ""); !errors.As(err, &cerr) || cerr.UnknownIndex != "nope" {
		t.Fatalf("unknown index: %v", err)
	}
}

func TestKubeCallsAreRecordedAndAnsweredFromScripts(t *testing.T) {
	h := heraldtest.New(t)
	pods := kube.Namespaced[corev1.Pod]("shop")
	if _, err := pods.Get("web-0"); !kube.IsNotFound(err) {
		t.Fatalf("unscripted get: %v", err)
	}
	h.Respond(herald.VerbGet, "Pod shop/web-*", pod("web-0", nil, corev1.PodRunning))
	if p, err := pods.Get("web-0"); err != nil || p.Status.Phase != corev1.PodRunning {
		t.Fatalf("scripted get: %v %v", p, err)
	}
	h.RespondOnce(herald.VerbPatch, "shop/web-0", &kube.Error{Kind: kube.Conflict, Message: "stale"})
	_, err := pods.Patch("web-0", kube.MergePatch(map[string]any{"metadata": map[string]any{"labels": map[string]string{"seen": "true"}}}))
	if !kube.IsConflict(err) || !kube.IsRetryable(err) {
		t.Fatalf("scripted conflict: %v", err)
	}
	if _, err := pods.Patch("web-0", kube.MergePatch(`{"x":1}`)); err != nil {
		t.Fatalf("second patch: %v", err)
	}
	applied, err := pods.Apply("web-0", map[string]any{"spec": map[string]any{"nodeName": "n2"}}, true)
	if err != nil || applied.Name != "web-0" || applied.Namespace != "shop" || applied.Kind != "Pod" {
		t.Fatalf("apply echo: %+v %v", applied, err)
	}
	if err := pods.Delete("web-0", kube.DeleteOptions{UID: "u1", Propagation: kube.PropagationBackground}); err != nil {
		t.Fatal(err)
	}
	w := h.TakeWrites()
	if len(w) != 6 || w[2].Verb != herald.VerbPatch || w[2].PatchType != "merge" || !strings.Contains(w[2].Body, `"seen":"true"`) {
		t.Fatalf("writes: %+v", w)
	}
	if w[4].Verb != herald.VerbApply || !w[4].Force || !strings.Contains(w[4].Body, `"apiVersion":"v1"`) {
		t.Fatalf("apply write: %+v", w[4])
	}
	if w[5].Delete.UID != "u1" || w[5].Delete.Propagation != kube.PropagationBackground {
		t.Fatalf("delete write: %+v", w[5])
	}
}

func TestEventsNameTheObject(t *testing.T) {
	h := heraldtest.New(t)
	p := pod("web-0", nil, "")
	p.TypeMeta = metav1.TypeMeta{} // as client-go leaves listed objects: the Go type names the kind
	if err := events.Warning(p, "DisallowedImage", "unpinned"); err != nil {
		t.Fatal(err)
	}
	view, _ := herald.ParseView(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"}}`)
	if err := events.New(view, events.TypeNormal, "Scaled", "to 3").Action("Scale").Related(p).Publish(); err != nil {
		t.Fatal(err)
	}
	ev := h.Events()
	if len(ev) != 2 || ev[0].Regarding.Kind.Kind != "Pod" || ev[0].Regarding.UID != "uid-web-0" || ev[0].Action != "DisallowedImage" || ev[0].Type != events.TypeWarning {
		t.Fatalf("events: %+v", ev)
	}
	if ev[1].Regarding.Kind != herald.GVK("apps", "v1", "Deployment") || ev[1].Related == nil || ev[1].Action != "Scale" {
		t.Fatalf("event 2: %+v", ev[1])
	}
	h.RespondEvents(&kube.Error{Kind: kube.NotGranted, Message: "events"})
	if err := events.Normal(p, "X", "y"); !kube.IsNotGranted(err) {
		t.Fatalf("refused: %v", err)
	}
	if err := events.Normal(map[string]any{"kind": "Pod"}, "X", "y"); err == nil {
		t.Fatal("an object without a name is refused")
	}
}

func TestMetricsAreCheckedAgainstTheManifest(t *testing.T) {
	h := heraldtest.New(t)
	h.Declare(herald.NewManifest("x", "1").
		Metric(herald.CounterMetric("alerts_total", "a").Labels("namespace")).
		Metric(herald.GaugeMetric("stuck", "s")).
		Metric(herald.HistogramMetric("seconds", "h")))
	metrics.Counter("alerts_total").With("shop").Inc()
	metrics.Counter("alerts_total").With("shop").Add(2)
	metrics.Counter("alerts_total").With("shop").Add(-1) // dropped
	metrics.Counter("alerts_total").Inc()                // dropped: no label value
	metrics.Gauge("stuck").Set(3)
	metrics.Gauge("stuck").Dec()
	metrics.Histogram("seconds").ObserveDuration(1500 * time.Millisecond)
	metrics.Counter("undeclared").Inc() // dropped
	if v, _ := h.Metric("alerts_total", "shop"); v != 3 {
		t.Errorf("counter: %v", v)
	}
	if v, _ := h.Metric("stuck"); v != 2 {
		t.Errorf("gauge: %v", v)
	}
	if o := h.Observations("seconds"); len(o) != 1 || o[0] != 1.5 {
		t.Errorf("histogram: %v", o)
	}
	dropped := 0
	for _, u := range h.MetricUpdates() {
		if u.Dropped != "" {
			dropped++
		}
	}
	if dropped != 3 {
		t.Errorf("dropped: %d of %+v", dropped, h.MetricUpdates())
	}
}

func TestRequeuesAreRecorded(t *testing.T) {
	h := heraldtest.New(t)
	workqueue.RequeueAfter(time.Minute)
	if r := h.TakeRequeues(); len(r) != 1 || r[0] != time.Minute {
		t.Fatalf("requeues: %v", r)
	}
}

func TestTheTestHostAnswersASecondOfDeadlineUnlessTold(t *testing.T) {
	h := heraldtest.New(t)
	if got := deadline.Remaining(); got != time.Second {
		t.Fatalf("default: %v", got)
	}
	h.SetDeadlineRemaining(1500*time.Millisecond + 700*time.Microsecond)
	if got := deadline.Remaining(); got != 1500*time.Millisecond {
		t.Fatalf("set (rounded down to the millisecond): %v", got)
	}
	h.SetDeadlineRemaining(-time.Second)
	if got := deadline.Remaining(); got != 0 {
		t.Fatalf("passed: %v", got)
	}
	if got := heraldtest.New(t); got.DeadlineRemaining() != time.Second {
		t.Fatal("a new stand-in starts at a second")
	}
}

func TestHTTPClientsReachTheScriptedHost(t *testing.T) {
	h := heraldtest.New(t)
	h.HTTP.Respond("https://hooks.example.com/", heraldtest.NewResponse(200).WithBody(`{"ok":true}`).WithHeader("content-type", "application/json"))
	h.HTTP.FailOnce("https://hooks.example.com/flaky", wasihttp.Timeout)
	resp, err := wasihttp.Client.Post("https://hooks.example.com/alerts", "application/json", strings.NewReader(`{"pod":"shop/web-0"}`))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("post: %v %v", resp, err)
	}
	body, _ := io.ReadAll(resp.Body)
	if string(body) != `{"ok":true}` || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("response: %q %v", body, resp.Header)
	}
	_, err = wasihttp.Client.Get("https://hooks.example.com/flaky")
	var herr *wasihttp.Error
	if !errors.As(err, &herr) || herr.Kind != wasihttp.Timeout || !herr.IsRetryable() {
		t.Fatalf("scripted failure: %v", err)
	}
	h.HTTP.Grant("https://hooks.example.com")
	if _, err := wasihttp.Client.Get("https://elsewhere.example.com/"); !wasihttp.IsDenied(err) {
		t.Fatalf("ungranted origin: %v", err)
	}
	reqs := h.HTTP.Requests()
	if len(reqs) != 3 || reqs[0].Method != "POST" || string(reqs[0].Body) != `{"pod":"shop/web-0"}` {
		t.Fatalf("requests: %+v", reqs)
	}
}
