package herald_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	herald "herald.dev/sdk/go"
	"herald.dev/sdk/go/heraldtest"
)

func TestWebhookBuildersFillEveryField(t *testing.T) {
	m := herald.NewManifest("gate", "0.1.0").
		Validating(herald.NewWebhook().
			Rule(herald.AdmissionRuleFor[corev1.Pod]().Create().Update().Create()).
			Rule(herald.NewAdmissionRule(herald.GVK("example.com", "v1", "Widget")).Operation(herald.OperationDelete, herald.OperationConnect)).
			InNamespaces("shop", "web").
			ObjectsLabelled("app=web").
			WithTimeoutSeconds(5)).
		Mutating(herald.NewWebhook().
			Rule(herald.AdmissionRuleFor[appsv1.Deployment]().Update().OfSubresource("scale")).
			NamespacesLabelled("team=shop").
			WithFailurePolicy(herald.FailurePolicyIgnore))
	v := m.ValidatingWebhook
	if len(v.Rules) != 2 || v.FailurePolicy != herald.FailurePolicyFail || v.TimeoutSeconds != 5 || v.ObjectSelector != "app=web" {
		t.Fatalf("validating webhook: %+v", v)
	}
	if v.NamespaceSelector != "kubernetes.io/metadata.name in (shop,web)" {
		t.Errorf("namespace selector: %q", v.NamespaceSelector)
	}
	pods := v.Rules[0]
	if pods.Kind != herald.GVK("", "v1", "Pod") || !slices.Equal(pods.Operations, []herald.Operation{herald.OperationCreate, herald.OperationUpdate}) || pods.Subresource != "" {
		t.Errorf("pod rule (CREATE once): %+v", pods)
	}
	if ops := v.Rules[1].Operations; !slices.Equal(ops, []herald.Operation{herald.OperationDelete, herald.OperationConnect}) {
		t.Errorf("widget rule: %v", ops)
	}
	mu := m.MutatingWebhook
	if mu.FailurePolicy != herald.FailurePolicyIgnore || mu.NamespaceSelector != "team=shop" || mu.TimeoutSeconds != 0 {
		t.Fatalf("mutating webhook: %+v", mu)
	}
	if r := mu.Rules[0]; r.Kind != herald.GVK("apps", "v1", "Deployment") || r.Subresource != "scale" {
		t.Errorf("deployment rule: %+v", r)
	}
	names := []string{herald.OperationCreate.String(), herald.OperationConnect.String(), herald.FailurePolicyIgnore.String()}
	if !slices.Equal(names, []string{"CREATE", "CONNECT", "Ignore"}) {
		t.Errorf("names: %v", names)
	}
	if plain := herald.NewManifest("watcher", "0.1.0"); plain.ValidatingWebhook != nil || plain.MutatingWebhook != nil {
		t.Error("a new manifest admits nothing")
	}
}

func podWithImages(name string, images ...string) *corev1.Pod {
	p := pod(name, map[string]string{"app": "web"}, corev1.PodPending)
	for i, image := range images {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c" + string(rune('0'+i)), Image: image})
	}
	return p
}

func TestReviewsCarryEveryFieldTypedAndLazily(t *testing.T) {
	created := heraldtest.Creating(t, podWithImages("web-0", "nginx:1.27"))
	if created.Operation != herald.OperationCreate || created.Kind != herald.GVK("", "v1", "Pod") || created.Resource != "pods" ||
		created.Namespace != "shop" || created.Name != "web-0" || created.Key() != "shop/web-0" || created.Subresource != "" ||
		created.UID == "" || created.DryRun || created.UserInfo.Username != "admin" || created.OldObjectJSON != "" {
		t.Fatalf("create review: %+v", created)
	}
	if !strings.Contains(created.OptionsJSON, `"kind":"CreateOptions"`) {
		t.Errorf("options: %s", created.OptionsJSON)
	}
	p, err := herald.DecodeObject[corev1.Pod](created)
	if err != nil || p.Spec.Containers[0].Image != "nginx:1.27" {
		t.Fatalf("object: %v %+v", err, p)
	}
	if _, err := herald.DecodeOldObject[corev1.Pod](created); err == nil || err.Error() != "the CREATE review of shop/web-0 carries no oldObject" {
		t.Errorf("a create has no old object: %v", err)
	}

	updated := heraldtest.Updating(t, podWithImages("web-0", "nginx:1.27"), podWithImages("web-0", "nginx:1.28"))
	before, err := herald.DecodeOldObject[corev1.Pod](updated)
	if err != nil || before.Spec.Containers[0].Image != "nginx:1.27" || updated.Operation != herald.OperationUpdate {
		t.Fatalf("old object: %v %+v", err, before)
	}
	view, err := updated.ObjectView()
	var spec corev1.PodSpec
	if err != nil || view.Metadata.Labels["app"] != "web" {
		t.Fatalf("view: %v %+v", err, view)
	}
	if found, err := view.Spec(&spec); !found || err != nil || spec.Containers[0].Image != "nginx:1.28" {
		t.Fatalf("view spec: %v %v %+v", found, err, spec)
	}
	if oldView, err := updated.OldObjectView(); err != nil || oldView.Metadata.Name != "web-0" {
		t.Fatalf("old view: %v", err)
	}

	deleted := heraldtest.Deleting(t, podWithImages("web-0", "nginx:1.27"))
	if deleted.Operation != herald.OperationDelete || deleted.ObjectJSON != "" || deleted.Name != "web-0" || !strings.Contains(deleted.OptionsJSON, "DeleteOptions") {
		t.Fatalf("delete review: %+v", deleted)
	}
	var obj map[string]any
	if err := deleted.Object(&obj); err == nil || !strings.Contains(err.Error(), "the DELETE review of shop/web-0 carries no object") {
		t.Errorf("a delete has no object: %v", err)
	}
	if _, err := deleted.ObjectView(); err == nil {
		t.Error("a delete has no object to view")
	}
	broken := &herald.AdmissionReview{ObjectJSON: `{"spec": 3}`}
	if _, err := herald.DecodeObject[corev1.Pod](broken); err == nil || !strings.Contains(err.Error(), "decoding the review's object as v1.Pod") {
		t.Errorf("a broken object: %v", err)
	}
}

func TestVerdictsAllowDenyWithCodesAndWarnings(t *testing.T) {
	allow := herald.Allow().Warn("image is old").Warn("no limits")
	if !allow.Allowed || allow.Message != "" || allow.Code != 0 || !slices.Equal(allow.Warnings, []string{"image is old", "no limits"}) {
		t.Errorf("allow: %+v", allow)
	}
	deny := herald.Deny("images must be pinned").WithCode(422)
	if deny.Allowed || deny.Message != "images must be pinned" || deny.Code != 422 || deny.Warnings != nil {
		t.Errorf("deny: %+v", deny)
	}
	if d := herald.Deny("no"); d.Code != 0 {
		t.Errorf("a refusal's code defaults to the host's 403: %+v", d)
	}
}

// patch decodes a mutation's JSON Patch into generic operations.
func patch(t *testing.T, m *herald.Mutation) []map[string]any {
	t.Helper()
	if m.Change.Kind != herald.ChangeJSONPatch {
		t.Fatalf("not a patch: %+v", m.Change)
	}
	var ops []map[string]any
	if err := json.Unmarshal([]byte(m.Change.JSON), &ops); err != nil {
		t.Fatalf("patch %s: %v", m.Change.JSON, err)
	}
	return ops
}

func TestMutationsAreNonePatchesOrChangedObjects(t *testing.T) {
	none := herald.Unchanged().Warn("looked")
	if !none.Verdict.Allowed || none.Change.Kind != herald.ChangeNone || none.Change.JSON != "" || none.Verdict.Warnings[0] != "looked" {
		t.Errorf("unchanged: %+v", none)
	}

	m, err := herald.Patch(
		herald.PatchAdd(herald.JSONPointer("metadata", "labels", "app.kubernetes.io/name"), "web"),
		herald.PatchReplace("/spec/replicas", 0),
		herald.PatchAdd("/metadata/annotations~1x", nil),
		herald.PatchRemove("/metadata/labels/tmp"),
		herald.PatchOperation{Op: "move", From: "/a", Path: "/b"},
	)
	if err != nil || !m.Verdict.Allowed {
		t.Fatalf("patch: %v %+v", err, m)
	}
	want := []map[string]any{
		{"op": "add", "path": "/metadata/labels/app.kubernetes.io~1name", "value": "web"},
		{"op": "replace", "path": "/spec/replicas", "value": 0.0},
		{"op": "add", "path": "/metadata/annotations~1x", "value": nil},
		{"op": "remove", "path": "/metadata/labels/tmp"},
		{"op": "move", "from": "/a", "path": "/b"},
	}
	if got := patch(t, m); !reflect.DeepEqual(got, want) {
		t.Errorf("patch:\n got %v\nwant %v", got, want)
	}
	if empty, _ := herald.Patch(); empty.Change.JSON != "[]" {
		t.Errorf("an empty patch: %q", empty.Change.JSON)
	}
	if _, err := herald.Patch(herald.PatchAdd("/x", make(chan int))); err == nil || !strings.HasPrefix(err.Error(), "encoding the JSON Patch") {
		t.Errorf("an unencodable value: %v", err)
	}
	if herald.JSONPointer("a~b", "c/d") != "/a~0b/c~1d" {
		t.Error("JSONPointer escapes ~ and /")
	}

	changed := podWithImages("web-0", "nginx")
	changed.Spec.Containers[0].Image = "nginx:1.27"
	m, err = herald.ChangedObject(changed)
	if err != nil || m.Change.Kind != herald.ChangeObject || !m.Verdict.Allowed {
		t.Fatalf("changed object: %v %+v", err, m)
	}
	var back corev1.Pod
	if err := json.Unmarshal([]byte(m.Change.JSON), &back); err != nil || back.Spec.Containers[0].Image != "nginx:1.27" || back.Name != "web-0" {
		t.Errorf("changed object: %v %s", err, m.Change.JSON)
	}
	if _, err := herald.ChangedObject(func() {}); err == nil || !strings.HasPrefix(err.Error(), "encoding the changed object") {
		t.Errorf("an unencodable object: %v", err)
	}

	refused := herald.DenyMutation("not here")
	if refused.Verdict.Allowed || refused.Verdict.Message != "not here" || refused.Change.Kind != herald.ChangeNone {
		t.Errorf("refused: %+v", refused)
	}
}

// labeller adds a team label to Pods that lack one and refuses Pods
// labelled team=none: the shape of a mutating plugin, tested as an author
// would.
type labeller struct{ herald.Base }

func (labeller) Manifest() *herald.Manifest {
	return herald.NewManifest("labeller", "0.1.0").
		Mutating(herald.NewWebhook().Rule(herald.AdmissionRuleFor[corev1.Pod]().Create()))
}

func (labeller) Mutate(review *herald.AdmissionReview) (*herald.Mutation, error) {
	view, err := review.ObjectView()
	if err != nil {
		return nil, err
	}
	switch view.Metadata.Labels["team"] {
	case "none":
		return herald.DenyMutation("team=none is not a team"), nil
	case "":
		return herald.Patch(herald.PatchAdd(herald.JSONPointer("metadata", "labels", "team"), "shop"))
	}
	return herald.Unchanged(), nil
}

func TestAMutatingPluginIsUnitTestedWithReviews(t *testing.T) {
	p := labeller{}
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", Labels: map[string]string{"app": "web"}}}
	m, err := p.Mutate(heraldtest.Creating(t, bare))
	if err != nil {
		t.Fatal(err)
	}
	if ops := patch(t, m); len(ops) != 1 || ops[0]["path"] != "/metadata/labels/team" || ops[0]["value"] != "shop" {
		t.Errorf("labelled: %v", ops)
	}
	bare.Labels["team"] = "none"
	if m, err := p.Mutate(heraldtest.Creating(t, bare)); err != nil || m.Verdict.Allowed {
		t.Errorf("team=none: %v %+v", err, m)
	}
	bare.Labels["team"] = "web"
	if m, err := p.Mutate(heraldtest.Creating(t, bare)); err != nil || m.Change.Kind != herald.ChangeNone {
		t.Errorf("already labelled: %v %+v", err, m)
	}
}
