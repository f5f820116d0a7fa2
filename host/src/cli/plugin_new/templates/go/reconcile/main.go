// Command {{name}} is a Herald controller in Go, written with the SDK's
// reconcile API (controller-runtime's For, Owns, Watches, Request and
// Result). It keeps a ConfigMap <deployment>-summary beside every
// Deployment, with its images and replicas, owned by the Deployment (so
// Kubernetes deletes it with it), and puts it back when someone changes or
// deletes it.
package main

import (
	"log/slog"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	herald "herald.dev/sdk/go"
	"herald.dev/sdk/go/kube"
	"herald.dev/sdk/go/reconcile"
)

// Summaries keeps every Deployment's summary; it has no state of its own.
type Summaries struct{}

// Reconcile brings the summary of the Deployment req names in line with
// d, the cache's current state of it (nil: it is gone).
func (Summaries) Reconcile(req reconcile.Request, d *appsv1.Deployment) (reconcile.Result, error) {
	if d == nil {
		// Gone: Kubernetes deletes the summary it owned.
		slog.Info("gone deployment=" + req.String())
		return reconcile.Result{}, nil
	}
	var images []string
	for _, c := range d.Spec.Template.Spec.Containers {
		images = append(images, c.Image)
	}
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	summary := map[string]any{
		"metadata": map[string]any{"ownerReferences": []map[string]any{{
			"apiVersion": "apps/v1", "kind": "Deployment", "name": req.Name,
			"uid": d.UID, "controller": true, "blockOwnerDeletion": true,
		}}},
		"data": map[string]string{"images": strings.Join(images, ","), "replicas": strconv.Itoa(int(replicas))},
	}
	if _, err := kube.Namespaced[corev1.ConfigMap](req.Namespace).Apply(req.Name+"-summary", summary, true); err != nil {
		return reconcile.Result{}, err
	}
	slog.Info("summarized deployment=" + req.String() + " images=" + strings.Join(images, ",") + " replicas=" + strconv.Itoa(int(replicas)))
	// Level-based: look again in ten minutes even if nothing changes.
	return reconcile.Result{RequeueAfter: 10 * time.Minute}, nil
}

// Controller is the plugin: For Deployments; a change to a ConfigMap a
// Deployment controls (its summary) reconciles that Deployment.
func Controller() herald.Handler {
	manifest := herald.NewManifest("{{name}}", "0.1.0").
		Write(herald.WriteRuleFor[corev1.ConfigMap]().Allow(herald.VerbApply).AllNamespaces())
	return reconcile.For[appsv1.Deployment](manifest).
		Owns(herald.KindOf[corev1.ConfigMap]()).
		Complete(Summaries{})
}

func init() { herald.Register(Controller()) }

func main() {}
