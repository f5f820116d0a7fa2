// Package config reads the plugin's configuration: the `config` value the
// operator gave the plugin (in the host configuration or its sidecar file).
package config

import (
	"encoding/json"
	"fmt"

	"herald.dev/sdk/go/internal/host"
)

// Raw is the configuration as JSON text; false when there is none.
func Raw() (string, bool) { return host.Get().Config() }

// Get decodes the configuration into v (a pointer, typically to a struct
// with defaults already set); false, leaving v alone, when there is none.
func Get(v any) (bool, error) {
	text, ok := Raw()
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal([]byte(text), v); err != nil {
		return false, fmt.Errorf("decoding the plugin's configuration: %w", err)
	}
	return true, nil
}
