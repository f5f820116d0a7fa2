// Command helm is Helm's own command line, built from the Go module proxy at
// the version go.mod pins, so that the chart's tests in host/tests/cli/helm.rs
// run the real `helm lint`, `helm template` and `helm install --dry-run`.
//
// Build it with tools/helm/build.sh (into target/tools/helm).
package main

import (
	"errors"
	"fmt"
	"os"

	helm "helm.sh/helm/v4/pkg/cmd"
)

func main() {
	root, err := helm.NewRootCmd(os.Stdout, os.Args[1:], helm.SetupLogging)
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
	if err := root.Execute(); err != nil {
		// Helm has printed the error; keep the exit code it chose.
		var exit helm.CommandError
		if errors.As(err, &exit) {
			os.Exit(exit.ExitCode)
		}
		os.Exit(1)
	}
}
