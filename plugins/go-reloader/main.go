// Command go-reloader is a Herald plugin in Go, a port of Stakater
// Reloader's core behaviour written with the SDK's reconcile API: a
// Deployment annotated to follow ConfigMaps or Secrets is rolled when
// their data changes, once per change, and never for anything else.
//
// A Deployment opts in with Reloader's annotations:
//
//	configmap.reloader.stakater.com/reload: "settings,flags"  # these ConfigMaps
//	secret.reloader.stakater.com/reload: "db-credentials"     # these Secrets
//	reloader.stakater.com/auto: "true"                        # every one its pods reference
//
// It reconciles Deployments, and maps a change of a ConfigMap or Secret to
// the Deployments of its namespace that follow it. The reconcile hashes
// the data of everything the Deployment follows; the hash is recorded on
// the Deployment (metadata.annotations, no rollout) the first time, and
// when it differs later it is written to the pod template's annotations
// too, which rolls the Deployment. Both are one server-side apply with the
// plugin's field manager.
//
// Test it with `go test ./...`; build it into a component with `herald
// plugin build` (see README.md).
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	herald "herald.dev/sdk/go"
	"herald.dev/sdk/go/cache"
	"herald.dev/sdk/go/kube"
	"herald.dev/sdk/go/metrics"
	"herald.dev/sdk/go/reconcile"
)

// The annotations a Deployment follows its sources with (Reloader's).
const (
	reloadConfigMaps = "configmap.reloader.stakater.com/reload"
	reloadSecrets    = "secret.reloader.stakater.com/reload"
	reloadAuto       = "reloader.stakater.com/auto"
)

// HashAnnotation holds the hash of the followed data: on the Deployment
// once seen, and on its pod template once rolled for a change.
const HashAnnotation = "reloader.herald.example.com/hash"

// source is one ConfigMap or Secret a Deployment follows.
type source struct {
	kind string // ConfigMap or Secret
	name string
}

// followed is what d follows, sorted: the names its annotations list, and
// with auto, every ConfigMap and Secret its pod template references.
func followed(d *appsv1.Deployment) []source {
	var out []source
	for _, name := range names(d.Annotations[reloadConfigMaps]) {
		out = append(out, source{"ConfigMap", name})
	}
	for _, name := range names(d.Annotations[reloadSecrets]) {
		out = append(out, source{"Secret", name})
	}
	if d.Annotations[reloadAuto] == "true" {
		out = append(out, referenced(&d.Spec.Template.Spec)...)
	}
	slices.SortFunc(out, func(a, b source) int {
		return strings.Compare(a.kind+"/"+a.name, b.kind+"/"+b.name)
	})
	return slices.Compact(out)
}

// names splits a comma-separated list, dropping blanks.
func names(list string) []string {
	var out []string
	for _, name := range strings.Split(list, ",") {
		if name = strings.TrimSpace(name); name != "" {
			out = append(out, name)
		}
	}
	return out
}

// referenced is every ConfigMap and Secret a pod spec mounts or reads its
// environment from.
func referenced(spec *corev1.PodSpec) []source {
	var out []source
	add := func(kind, name string) {
		if name != "" {
			out = append(out, source{kind, name})
		}
	}
	for _, v := range spec.Volumes {
		if v.ConfigMap != nil {
			add("ConfigMap", v.ConfigMap.Name)
		}
		if v.Secret != nil {
			add("Secret", v.Secret.SecretName)
		}
		if v.Projected != nil {
			for _, p := range v.Projected.Sources {
				if p.ConfigMap != nil {
					add("ConfigMap", p.ConfigMap.Name)
				}
				if p.Secret != nil {
					add("Secret", p.Secret.Name)
				}
			}
		}
	}
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		for _, from := range c.EnvFrom {
			if from.ConfigMapRef != nil {
				add("ConfigMap", from.ConfigMapRef.Name)
			}
			if from.SecretRef != nil {
				add("Secret", from.SecretRef.Name)
			}
		}
		for _, env := range c.Env {
			if env.ValueFrom == nil {
				continue
			}
			if ref := env.ValueFrom.ConfigMapKeyRef; ref != nil {
				add("ConfigMap", ref.Name)
			}
			if ref := env.ValueFrom.SecretKeyRef; ref != nil {
				add("Secret", ref.Name)
			}
		}
	}
	return out
}

// follows says whether d follows the object kind/name.
func follows(d *appsv1.Deployment, kind, name string) bool {
	return slices.Contains(followed(d), source{kind, name})
}

// Reloader is the reconciler.
type Reloader struct{}

// dataHash hashes the data of the sources, in order; false if one is not
// (yet) in the cache.
func dataHash(namespace string, sources []source) (string, *source, error) {
	h := sha256.New()
	for i := range sources {
		s := &sources[i]
		var data map[string][]byte
		switch s.kind {
		case "ConfigMap":
			cm, err := cache.Get[corev1.ConfigMap](namespace, s.name)
			if err != nil || cm == nil {
				return "", s, err
			}
			data = make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
			for k, v := range cm.Data {
				data[k] = []byte(v)
			}
			for k, v := range cm.BinaryData {
				data[k] = v
			}
		case "Secret":
			secret, err := cache.Get[corev1.Secret](namespace, s.name)
			if err != nil || secret == nil {
				return "", s, err
			}
			data = secret.Data
		}
		// Length-prefixed, so that no two different contents hash alike.
		fmt.Fprintf(h, "%d:%s%d:%s%d\n", len(s.kind), s.kind, len(s.name), s.name, len(data))
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(h, "%d:%s%d:", len(k), k, len(data[k]))
			h.Write(data[k])
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil, nil
}

// Reconcile records the followed data's hash on a Deployment the first
// time, and rolls it (the hash on its pod template) when the hash changes.
func (Reloader) Reconcile(req reconcile.Request, d *appsv1.Deployment) (reconcile.Result, error) {
	if d == nil || d.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	sources := followed(d)
	if len(sources) == 0 {
		return reconcile.Result{}, nil
	}
	hash, missing, err := dataHash(req.Namespace, sources)
	if err != nil {
		return reconcile.Result{}, err
	}
	if missing != nil {
		// Its creation maps here again; Reloader, too, waits for it.
		slog.Info("waiting for a followed object", "deployment", req.String(), "kind", missing.kind, "name", missing.name)
		count("waiting")
		return reconcile.Result{}, nil
	}
	recorded := d.Annotations[HashAnnotation]
	if recorded == hash {
		count("unchanged")
		return reconcile.Result{}, nil
	}
	template := d.Spec.Template.Annotations[HashAnnotation]
	outcome := "recorded"
	if recorded != "" {
		template, outcome = hash, "rolled"
	}
	if err := apply(req, hash, template); err != nil {
		return reconcile.Result{}, err
	}
	if outcome == "rolled" {
		slog.Info("rolled for changed data", "deployment", req.String(), "hash", hash[:12])
	} else {
		slog.Info("following", "deployment", req.String(), "objects", len(sources), "hash", hash[:12])
	}
	count(outcome)
	return reconcile.Result{}, nil
}

// apply writes the Deployment's hash, and the pod template's (kept as it
// is unless rolling: a field the plugin's manager owns and leaves out of
// an apply is removed, which would roll the Deployment).
func apply(req reconcile.Request, hash, template string) error {
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]string{HashAnnotation: hash}}}
	if template != "" {
		patch["spec"] = map[string]any{"template": map[string]any{
			"metadata": map[string]any{"annotations": map[string]string{HashAnnotation: template}},
		}}
	}
	_, err := kube.Namespaced[appsv1.Deployment](req.Namespace).Apply(req.Name, patch, true)
	return err
}

func count(outcome string) { metrics.Counter("reconciles_total").With(outcome).Inc() }

// followersOf maps a ConfigMap or Secret (kind) to the cached Deployments
// of its namespace that follow it (as Reloader does, a scan of the
// namespace's Deployments: what they follow is a list inside an
// annotation, which no index can file).
func followersOf(kind string) reconcile.MapFunc {
	return func(obj *herald.ObjectView) []reconcile.Request {
		namespace := obj.Metadata.Namespace
		deployments, err := cache.List[appsv1.Deployment](namespace, "")
		if err != nil {
			slog.Error("listing Deployments", "namespace", namespace, "error", err.Error())
			return nil
		}
		var out []reconcile.Request
		for i := range deployments {
			if follows(&deployments[i], kind, obj.Metadata.Name) {
				out = append(out, reconcile.Request{Namespace: namespace, Name: deployments[i].Name})
			}
		}
		return out
	}
}

// Controller is the plugin's controller: Deployments, and the ConfigMaps
// and Secrets they follow.
func Controller() *reconcile.Controller[appsv1.Deployment] {
	manifest := herald.NewManifest("go-reloader", "0.1.0").
		Write(herald.WriteRuleFor[appsv1.Deployment]().Allow(herald.VerbApply).AllNamespaces()).
		Metric(herald.CounterMetric("reconciles_total", "Deployment reconciles by outcome").Labels("outcome"))
	return reconcile.For[appsv1.Deployment](manifest).
		Watches(herald.KindOf[corev1.ConfigMap](), followersOf("ConfigMap")).
		Watches(herald.KindOf[corev1.Secret](), followersOf("Secret"))
}

func init() { herald.Register(Controller().Complete(Reloader{})) }

func main() {}
