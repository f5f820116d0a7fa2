// Command webhookgo is B15's baseline: the admission webhook a Go author
// would write with controller-runtime's webhook server, doing what
// Herald's `admission-bench` fixture does. It validates Pods: every
// container image must come from a registry its namespace allows (the
// namespace's `registries` label, registries separated by `_`, as a label
// value cannot hold a comma; docker.io when unset), the namespace read from
// the manager's cache.
//
// It serves HTTPS on --port with the certificate in --cert-dir (tls.crt,
// tls.key), path /validate, and prints one line, "ready", once its cache
// of Namespaces has synced.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// imagePolicy refuses a Pod with an image from a registry its namespace
// does not allow.
type imagePolicy struct {
	reader  client.Reader
	decoder admission.Decoder
}

// registry is the registry an image reference names: its first path
// element if that has a '.' or ':' or is localhost, else docker.io.
func registry(image string) string {
	first, _, found := strings.Cut(image, "/")
	if found && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return first
	}
	return "docker.io"
}

// Handle decides one review.
func (p *imagePolicy) Handle(ctx context.Context, req admission.Request) admission.Response {
	pod := &corev1.Pod{}
	if err := p.decoder.Decode(req, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	namespace := &corev1.Namespace{}
	if err := p.reader.Get(ctx, client.ObjectKey{Name: req.Namespace}, namespace); err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	allowed := []string{"docker.io"}
	if label, ok := namespace.Labels["registries"]; ok {
		allowed = strings.Split(label, "_")
	}
	for _, container := range pod.Spec.Containers {
		from := registry(container.Image)
		ok := false
		for _, registry := range allowed {
			if registry == from {
				ok = true
				break
			}
		}
		if !ok {
			return admission.Denied(fmt.Sprintf("container %s: registry %s is not allowed in namespace %s", container.Name, from, req.Namespace))
		}
	}
	return admission.Allowed("")
}

func main() {
	// --kubeconfig is controller-runtime's own flag (pkg/client/config).
	certDir := flag.String("cert-dir", "", "the directory holding tls.crt and tls.key")
	port := flag.Int("port", 9443, "the HTTPS port on 127.0.0.1")
	flag.Parse()
	config, err := ctrl.GetConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "webhookgo:", err)
		os.Exit(1)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		fmt.Fprintln(os.Stderr, "webhookgo:", err)
		os.Exit(1)
	}
	manager, err := ctrl.NewManager(config, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host:    "127.0.0.1",
			Port:    *port,
			CertDir: *certDir,
		}),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "webhookgo:", err)
		os.Exit(1)
	}
	manager.GetWebhookServer().Register("/validate", &webhook.Admission{Handler: &imagePolicy{
		reader:  manager.GetClient(),
		decoder: admission.NewDecoder(scheme),
	}})
	ctx := ctrl.SetupSignalHandler()
	if _, err := manager.GetCache().GetInformer(ctx, &corev1.Namespace{}); err != nil {
		fmt.Fprintln(os.Stderr, "webhookgo:", err)
		os.Exit(1)
	}
	go func() {
		if !manager.GetCache().WaitForCacheSync(ctx) {
			fmt.Fprintln(os.Stderr, "webhookgo: the cache did not sync")
			os.Exit(1)
		}
		fmt.Println("ready")
	}()
	if err := manager.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "webhookgo:", err)
		os.Exit(1)
	}
}
