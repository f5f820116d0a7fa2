package main

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	herald "herald.dev/sdk/go"
	"herald.dev/sdk/go/heraldtest"
)

func configMap(name, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Data:       map[string]string{"value": value},
	}
}

func secret(name, value string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Data:       map[string][]byte{"password": []byte(value)},
	}
}

func deployment(name string, annotations map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
		Namespace: "shop", Name: name, Annotations: annotations,
	}}
}

func newPlugin(t *testing.T) (herald.Handler, *heraldtest.Host) {
	h := heraldtest.New(t)
	p := Controller().Complete(Reloader{})
	h.Declare(p.Manifest())
	return p, h
}

// applied is the one apply the plugin made, as the Deployment's hash and
// the pod template's ("" when the apply left it out).
func applied(t *testing.T, h *heraldtest.Host) (hash, template string) {
	t.Helper()
	writes := h.TakeWrites()
	if len(writes) != 1 || writes[0].Verb != herald.VerbApply || writes[0].Key() != "shop/web" || !writes[0].Force {
		t.Fatalf("writes %+v, want one forced apply of shop/web", writes)
	}
	var d appsv1.Deployment
	if err := writes[0].Decode(&d); err != nil {
		t.Fatal(err)
	}
	return d.Annotations[HashAnnotation], d.Spec.Template.Annotations[HashAnnotation]
}

// store puts what the plugin wrote into d, as the API server would.
func store(d *appsv1.Deployment, hash, template string) {
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[HashAnnotation] = hash
	if template != "" {
		d.Spec.Template.Annotations = map[string]string{HashAnnotation: template}
	}
}

func reconcileAdded(t *testing.T, p herald.Handler, h *heraldtest.Host, d *appsv1.Deployment) {
	t.Helper()
	h.Cache(d)
	if err := p.OnAdd(heraldtest.Added(t, d)); err != nil {
		t.Fatal(err)
	}
}

func outcomes(h *heraldtest.Host, names ...string) []float64 {
	var out []float64
	for _, name := range names {
		v, _ := h.Metric("reconciles_total", name)
		out = append(out, v)
	}
	return out
}

func TestAFollowingDeploymentIsRecordedFirstThenRolledOncePerDataChange(t *testing.T) {
	p, h := newPlugin(t)
	h.Cache(configMap("settings", "blue"))
	web := deployment("web", map[string]string{reloadConfigMaps: "settings"})
	reconcileAdded(t, p, h, web)
	first, template := applied(t, h)
	if first == "" || template != "" {
		t.Fatalf("first sight applied hash %q template %q: want the hash recorded and the pod template untouched (no rollout)", first, template)
	}
	store(web, first, "")
	reconcileAdded(t, p, h, web) // its own write coming back
	if got := h.TakeWrites(); len(got) != 0 {
		t.Fatalf("an unchanged Deployment was written again: %+v", got)
	}

	// A label-only change of the ConfigMap: same data, no rollout.
	relabelled := configMap("settings", "blue")
	relabelled.Labels = map[string]string{"team": "shop"}
	h.Cache(relabelled)
	if err := p.OnUpdate(heraldtest.Updated(t, configMap("settings", "blue"), relabelled)); err != nil {
		t.Fatal(err)
	}
	if got := h.TakeWrites(); len(got) != 0 {
		t.Fatalf("a change that left the data alone rolled the Deployment: %+v", got)
	}

	h.Cache(configMap("settings", "green"))
	if err := p.OnUpdate(heraldtest.Updated(t, relabelled, configMap("settings", "green"))); err != nil {
		t.Fatal(err)
	}
	second, template := applied(t, h)
	if second == first || template != second {
		t.Fatalf("after a data change: hash %q (was %q), template %q; want the new hash on both", second, first, template)
	}
	if got := outcomes(h, "recorded", "unchanged", "rolled"); !slices.Equal(got, []float64{1, 2, 1}) {
		t.Fatalf("outcomes recorded/unchanged/rolled %v", got)
	}
}

func TestAChangeReachesOnlyTheDeploymentsThatFollowIt(t *testing.T) {
	_, h := newPlugin(t)
	auto := deployment("auto", map[string]string{reloadAuto: "true"})
	auto.Spec.Template.Spec = corev1.PodSpec{
		Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
			Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}},
			}},
		}}},
		Containers: []corev1.Container{{Name: "app", EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}},
		}}},
	}
	h.Cache(
		auto,
		deployment("listed", map[string]string{reloadConfigMaps: " other , settings"}),
		deployment("secrets-only", map[string]string{reloadSecrets: "db"}),
		deployment("mounts-but-not-opted-in", nil),
	)
	want := map[string][]string{
		"ConfigMap settings": {"auto", "listed"},
		"Secret db":          {"auto", "secrets-only"},
		"ConfigMap unused":   nil,
	}
	for _, obj := range []any{configMap("settings", "x"), secret("db", "s3cret"), configMap("unused", "y")} {
		view, err := heraldtest.Added(t, obj).View()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, req := range followersOf(view.Kind)(view) {
			got = append(got, req.Name)
		}
		if key := view.Kind + " " + view.Metadata.Name; !slices.Equal(got, want[key]) {
			t.Errorf("%s maps to %v, want %v", key, got, want[key])
		}
	}
}

func TestAFollowedObjectNotYetCreatedIsWaitedForWithoutAWrite(t *testing.T) {
	p, h := newPlugin(t)
	h.Cache(secret("db", "one"))
	web := deployment("web", map[string]string{reloadSecrets: "db", reloadConfigMaps: "later"})
	reconcileAdded(t, p, h, web)
	if got := h.TakeWrites(); len(got) != 0 {
		t.Fatalf("wrote %+v before every followed object existed", got)
	}
	h.Cache(configMap("later", "v"))
	if err := p.OnAdd(heraldtest.Added(t, configMap("later", "v"))); err != nil {
		t.Fatal(err)
	}
	if hash, template := applied(t, h); hash == "" || template != "" {
		t.Fatalf("once it exists: hash %q template %q, want the hash recorded without a rollout", hash, template)
	}
}

func TestRecordingKeepsAPodTemplateHashAlreadyThere(t *testing.T) {
	p, h := newPlugin(t)
	h.Cache(secret("db", "one"))
	web := deployment("web", map[string]string{reloadSecrets: "db"})
	web.Spec.Template.Annotations = map[string]string{HashAnnotation: "from-an-earlier-rollout"}
	reconcileAdded(t, p, h, web)
	if _, template := applied(t, h); template != "from-an-earlier-rollout" {
		t.Fatalf("template hash %q: an apply without it would remove it and roll the Deployment", template)
	}
}

func TestADeploymentThatFollowsNothingOrIsGoneIsLeftAlone(t *testing.T) {
	p, h := newPlugin(t)
	reconcileAdded(t, p, h, deployment("plain", map[string]string{"unrelated": "x"}))
	gone := deployment("gone", map[string]string{reloadConfigMaps: "settings"})
	if err := p.OnDelete(heraldtest.Deleted(t, gone)); err != nil {
		t.Fatal(err)
	}
	if got := h.TakeWrites(); len(got) != 0 {
		t.Fatalf("wrote %+v", got)
	}
}

// The hash of ConfigMap shop/settings {value: blue} and Secret shop/db
// {password: s3cret}, which plugins/reloader-py's tests pin too: both ports
// hash alike, so either may take over from the other without a rollout.
const pinnedHash = "ca90df4e6126004c809c6ffa27665f9b869f4180c2c78789ff3a5a5e538d9165"

func TestTheHashIsStable(t *testing.T) {
	h := heraldtest.New(t)
	h.Cache(configMap("settings", "blue"), secret("db", "s3cret"))
	hash, missing, err := dataHash("shop", []source{{"ConfigMap", "settings"}, {"Secret", "db"}})
	if err != nil || missing != nil {
		t.Fatalf("hash: missing %v, %v", missing, err)
	}
	if hash != pinnedHash {
		t.Fatalf("hash %s, want %s (reloader-py's too)", hash, pinnedHash)
	}
}
