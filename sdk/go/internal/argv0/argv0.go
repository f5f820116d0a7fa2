// Package argv0 gives the program a name before other packages initialize.
//
// Herald's sandbox passes a plugin no arguments at all, not even argv[0],
// and some libraries index os.Args[0] in an init function (k8s.io/klog/v2,
// which k8s.io/apimachinery pulls in, does), which panics and traps the
// instance while it starts. Go initializes packages in import-path order
// where dependencies allow (go.dev/ref/spec#Package_initialization), so this
// package, which imports only os and sorts before k8s.io, runs first.
package argv0

import "os"

func init() {
	if len(os.Args) == 0 {
		os.Args = []string{"herald-plugin"}
	}
}
