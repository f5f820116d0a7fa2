// Package cluster says which cluster the call under way is about (the
// cluster interface of world herald:plugin/plugin@0.6.0), and runs part of a
// call against another of the plugin's clusters.
//
// A daemon may watch several clusters, and the operator says which ones a
// plugin runs on (plugins.<name>.clusters). Every notification comes from
// one cluster; during its call, cache look-ups, kube calls and Events go to
// that cluster, so a plugin that only reacts where things happen needs
// nothing from this package. One that acts across clusters reads Current
// and Names, and uses Within:
//
//	origin := cluster.Current()
//	for _, other := range cluster.Names() {
//		if other == origin {
//			continue
//		}
//		err := cluster.Within(other, func() error {
//			_, err := kube.Apply(target, copy, true)
//			return err
//		})
//		…
//	}
//
// Each look-up, call and Event is still checked against the plugin's grants
// for the cluster it reaches. A plugin that never calls this package does
// not import the cluster interface, and the host runs it on its default
// cluster alone. In tests, heraldtest's Host answers from SetClusters and
// SetCluster.
package cluster

import "herald.dev/sdk/go/internal/host"

// Current is the cluster of the call under way (a DNS label such as west;
// the default cluster's configured name, default unless the operator names
// it): the notification's, or the one Within runs against.
func Current() string { return host.Get().ClusterCurrent() }

// Names are the clusters the plugin is delivered notifications from,
// sorted.
func Names() []string { return host.Get().ClusterNames() }

// Within runs work with name as the cluster of its look-ups, calls and
// Events, then goes back to the call's cluster (also when work fails or
// panics), and returns work's error. A cluster the plugin does not run on is
// refused before work runs.
func Within(name string, work func() error) error {
	if err := host.Get().ClusterTarget(&name); err != nil {
		return err
	}
	defer host.Get().ClusterTarget(nil)
	return work()
}
