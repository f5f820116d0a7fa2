// Command k8s-proto-schema describes, for Herald's protobuf-to-JSON
// transcoder, how the Kubernetes protobuf wire form of every built-in kind
// maps onto the JSON that Go's encoding/json writes for the same Go value.
//
// It walks, by reflection, every type registered in client-go's scheme and
// writes the schema as JSON to standard output. Kinds it cannot describe
// exactly are left out, with one line each on standard error, followed by
// a summary line. See README.md for the format and how to regenerate.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"k8s.io/client-go/kubernetes/scheme"
)

func main() {
	s, err := Generate(scheme.Scheme)
	if err != nil {
		fmt.Fprintln(os.Stderr, "k8s-proto-schema:", err)
		os.Exit(1)
	}
	for _, line := range s.Dropped {
		fmt.Fprintln(os.Stderr, "k8s-proto-schema:", line)
	}
	if os.Getenv("K8S_PROTO_SCHEMA_NOTES") != "" {
		for _, line := range s.Notes {
			fmt.Fprintln(os.Stderr, "k8s-proto-schema: note:", line)
		}
	}
	if err := s.WriteJSON(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "k8s-proto-schema:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "k8s-proto-schema: %d kinds, %d messages, %d unsupported (%d notes: K8S_PROTO_SCHEMA_NOTES=1 lists them)\n",
		len(s.Kinds), len(s.Messages), len(s.Unsupported), len(s.Notes))
}

// WriteJSON writes the schema with sorted keys, one kind, message or
// unsupported entry a line, so that regenerating it gives small diffs.
func (s *Schema) WriteJSON(w io.Writer) error {
	var b bytes.Buffer
	b.WriteString("{\n\"source\": ")
	if err := compact(&b, s.Source); err != nil {
		return err
	}
	b.WriteString(",\n\"kinds\": [")
	for i, k := range s.Kinds {
		separator(&b, i)
		if err := compact(&b, []string{k.Group, k.Version, k.Kind, k.Message}); err != nil {
			return err
		}
	}
	b.WriteString("\n],\n\"messages\": {")
	for i, id := range sortedKeys(s.Messages) {
		separator(&b, i)
		if err := entry(&b, id, s.Messages[id]); err != nil {
			return err
		}
	}
	b.WriteString("\n},\n\"unsupported\": {")
	for i, id := range sortedKeys(s.Unsupported) {
		separator(&b, i)
		if err := entry(&b, id, s.Unsupported[id]); err != nil {
			return err
		}
	}
	b.WriteString("\n}\n}\n")
	_, err := w.Write(b.Bytes())
	return err
}

// separator starts the i-th line of a list.
func separator(b *bytes.Buffer, i int) {
	if i > 0 {
		b.WriteByte(',')
	}
	b.WriteByte('\n')
}

// entry writes `"key": value`.
func entry(b *bytes.Buffer, key string, value any) error {
	if err := compact(b, key); err != nil {
		return err
	}
	b.WriteString(": ")
	return compact(b, value)
}

// compact writes v as JSON on one line, without escaping <, > and &.
func compact(b *bytes.Buffer, v any) error {
	var one bytes.Buffer
	encoder := json.NewEncoder(&one)
	encoder.SetEscapeHTML(false)
	if err := encoder.Encode(v); err != nil {
		return err
	}
	b.Write(bytes.TrimSuffix(one.Bytes(), []byte("\n")))
	return nil
}
