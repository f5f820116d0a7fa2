// Command sdk-bench-go is B11's plugin in Go (bench/src/b11_sdks.rs). It
// subscribes to Pods; with no configuration it does nothing with them (the
// no-op handler), with {"mode": "parse"} it parses each added object and
// reads its name (the parse handler): the whole object into a
// map[string]any with encoding/json, as the Python and JavaScript plugins
// parse theirs into a dict and an object; with {"mode": "view"} it reads
// only the metadata through the SDK's lazy view (as the Rust baseline,
// json-meta, reads only the metadata). One component serves all three, so a
// run builds and compiles it once; the handler is picked on the instance's
// first call, not per call. It links no k8s.io/api types.
package main

import (
	herald "herald.dev/sdk/go"
	"herald.dev/sdk/go/config"
)

// Bench is the plugin.
type Bench struct {
	herald.Base
	handle func(*herald.Event) error
	names  int
}

// Manifest subscribes to Pods.
func (b *Bench) Manifest() *herald.Manifest {
	return herald.NewManifest("sdk-bench-go", "0.1.0").
		Subscribe(herald.NewSubscription(herald.GVK("", "v1", "Pod")))
}

// OnAdd runs the configured handler.
func (b *Bench) OnAdd(e *herald.Event) error {
	if b.handle == nil {
		var settings struct {
			Mode string `json:"mode"`
		}
		if _, err := config.Get(&settings); err != nil {
			return err
		}
		switch settings.Mode {
		case "parse":
			b.handle = b.parse
		case "view":
			b.handle = b.view
		default:
			b.handle = b.noop
		}
	}
	return b.handle(e)
}

func (b *Bench) noop(*herald.Event) error { return nil }

func (b *Bench) parse(e *herald.Event) error {
	var object map[string]any
	if err := e.Object(&object); err != nil {
		return err
	}
	metadata, _ := object["metadata"].(map[string]any)
	name, _ := metadata["name"].(string)
	b.names += len(name)
	return nil
}

func (b *Bench) view(e *herald.Event) error {
	v, err := e.View()
	if err != nil {
		return err
	}
	b.names += len(v.Metadata.Name)
	return nil
}

func init() { herald.Register(&Bench{}) }

func main() {}
