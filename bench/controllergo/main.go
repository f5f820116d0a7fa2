// Command controllergo is B18's baseline: the controller of Herald's
// `deployment-summaries` fixture (plugins/fixtures/deployment-summaries)
// written as a Go author would write it with controller-runtime. For every
// Deployment it reads the Deployment from the manager's cache, builds its
// summary ConfigMap (`<name>-summary` in the Deployment's namespace: the
// images of its pod template's containers joined by commas, its replicas,
// 1 when unset, and a controller owner reference to the Deployment) and
// server-side applies it with its own field manager, forcing ownership, as
// the fixture's `apply(name, body, force = true)` does. It owns the
// ConfigMaps (`Owns`), as the fixture's `Controller::owns::<ConfigMap>()`:
// a change to a summary reconciles its Deployment again.
//
// Settings are controller-runtime's defaults except: one reconcile at a
// time (MaxConcurrentReconciles 1, which is also the default, set here
// because Herald's plugin reconciles one key at a time: its calls never
// overlap), no metrics server, no health probes, no leader election, and
// no logger (nothing is logged, as with no logger set; setting one to
// discard keeps controller-runtime from warning that none was set).
// controller-runtime's client is not rate-limited by default (QPS -1).
//
// The fixture's fault labels (`herald.dev/fault`, which the test suite
// uses to make a reconcile panic, loop or fail) are left out: the
// benchmark's Deployments carry none.
//
// Flags: --kubeconfig (controller-runtime's own flag; KUBECONFIG works
// too) and --field-manager. It prints one JSON line on stdout when it
// stops (SIGTERM or SIGINT): {"reconciles": N, "applies": M}.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// summaries is the reconciler.
type summaries struct {
	client       client.Client
	fieldManager string
	reconciles   atomic.Int64
	applies      atomic.Int64
}

// summary is the summary ConfigMap of deployment, as the fixture's
// summary.rs builds it: its name, a controller owner reference to the
// Deployment, the images of its containers and its replicas.
func summary(name, namespace string, deployment *appsv1.Deployment) *corev1ac.ConfigMapApplyConfiguration {
	images := make([]string, 0, len(deployment.Spec.Template.Spec.Containers))
	for _, container := range deployment.Spec.Template.Spec.Containers {
		// Rust's `filter_map(|c| c.image.as_deref())` skips a container
		// without an image; Go reads an unset image as "".
		if container.Image != "" {
			images = append(images, container.Image)
		}
	}
	replicas := int32(1)
	if deployment.Spec.Replicas != nil {
		replicas = *deployment.Spec.Replicas
	}
	return corev1ac.ConfigMap(name+"-summary", namespace).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion("apps/v1").
			WithKind("Deployment").
			WithName(name).
			WithUID(deployment.UID).
			WithController(true)).
		WithData(map[string]string{
			"images":   strings.Join(images, ","),
			"replicas": strconv.Itoa(int(replicas)),
		})
}

// Reconcile reads the Deployment from the cache and applies its summary.
func (s *summaries) Reconcile(ctx context.Context, request ctrl.Request) (ctrl.Result, error) {
	s.reconciles.Add(1)
	deployment := &appsv1.Deployment{}
	if err := s.client.Get(ctx, request.NamespacedName, deployment); err != nil {
		// Gone: nothing to do (the fixture's `await_change` on `None`).
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	body := summary(request.Name, request.Namespace, deployment)
	if err := s.client.Apply(ctx, body, client.FieldOwner(s.fieldManager), client.ForceOwnership); err != nil {
		return ctrl.Result{}, err
	}
	s.applies.Add(1)
	return ctrl.Result{}, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "controllergo:", err)
	os.Exit(1)
}

func main() {
	fieldManager := flag.String("field-manager", "controllergo", "the field manager of the summaries' server-side applies")
	flag.Parse()
	ctrl.SetLogger(logr.Discard())
	config, err := ctrl.GetConfig()
	if err != nil {
		fail(err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		fail(err)
	}
	manager, err := ctrl.NewManager(config, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
	})
	if err != nil {
		fail(err)
	}
	reconciler := &summaries{client: manager.GetClient(), fieldManager: *fieldManager}
	err = ctrl.NewControllerManagedBy(manager).
		For(&appsv1.Deployment{}).
		Owns(&corev1.ConfigMap{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(reconciler)
	if err != nil {
		fail(err)
	}
	if err := manager.Start(ctrl.SetupSignalHandler()); err != nil {
		fail(err)
	}
	line, err := json.Marshal(map[string]int64{
		"reconciles": reconciler.reconciles.Load(),
		"applies":    reconciler.applies.Load(),
	})
	if err != nil {
		fail(err)
	}
	fmt.Println(string(line))
}
