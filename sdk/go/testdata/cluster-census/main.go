// Command cluster-census is the Go SDK's cluster fixture: a plugin that asks
// which cluster each ConfigMap comes from (package cluster, world 0.6.0), so
// that host/tests/cli/sdk_go.rs can build it with `herald plugin build` and
// see it import herald:plugin/cluster@0.6.0 and answer through the real ABI.
package main

import (
	"log/slog"
	"strings"

	corev1 "k8s.io/api/core/v1"

	herald "herald.dev/sdk/go"
	"herald.dev/sdk/go/cluster"
)

// Census logs each ConfigMap with its cluster and the plugin's clusters.
type Census struct {
	herald.Base
}

// Manifest subscribes to ConfigMaps.
func (c *Census) Manifest() *herald.Manifest {
	return herald.NewManifest("go-cluster-census", "0.1.0").
		Subscribe(herald.SubscriptionTo[corev1.ConfigMap]())
}

// OnAdd logs the ConfigMap's key, its cluster and every cluster.
func (c *Census) OnAdd(e *herald.Event) error {
	slog.Info("counted", "key", e.Key, "cluster", cluster.Current(),
		"clusters", strings.Join(cluster.Names(), ","))
	return nil
}

func init() { herald.Register(&Census{}) }

func main() {}
