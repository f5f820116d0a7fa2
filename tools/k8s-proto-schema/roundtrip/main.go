// Command roundtrip writes, for every kind in Herald's protobuf schema,
// random fully populated objects in the two encodings a kube-apiserver
// answers with: its protobuf (the `k8s\x00` envelope) and its JSON. Herald's
// transcoder must turn the first into the second byte for byte; the host's
// test `proto_roundtrip` checks that for every pair written here.
//
// Objects are filled by the fuzzer Kubernetes tests its own codecs with
// (k8s.io/apimachinery's apitesting fuzzer and metav1's fuzzer funcs, as
// k8s.io/api's TestRoundTripExternalTypes), from a fixed seed, so a run is
// repeatable. The JSON is what a server holding the object would send: the
// protobuf is decoded again (protobuf cannot tell an empty list from an
// absent one, and neither can the server that stored it) and that object is
// written by apimachinery's JSON serializer.
//
// Usage:
//
//	go run ./roundtrip -schema ../../host/src/informer/protobuf/schema.json \
//	    -seed 1 -objects 3 -max-elements 1 -out DIR
//
// DIR gets `NNNNNN.pb` and `NNNNNN.json` for each object and `index.tsv`,
// one line per object: its number, apiVersion and kind. An object the JSON
// serializer refuses (random bytes where JSON is due) is not a possible
// answer: it is counted on standard error and left out.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"

	appsv1 "k8s.io/api/apps/v1"
	appsv1beta1 "k8s.io/api/apps/v1beta1"
	appsv1beta2 "k8s.io/api/apps/v1beta2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/meta"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

func main() {
	schemaPath := flag.String("schema", "../../host/src/informer/protobuf/schema.json", "Herald's protobuf schema, whose kinds are filled")
	seed := flag.Int64("seed", 1, "the fuzzer's seed")
	objects := flag.Int("objects", 3, "objects per kind")
	elements := flag.Int("max-elements", 1, "the most entries in a list or map (Kubernetes' own fuzzing: 1)")
	out := flag.String("out", "", "the directory to write to (required)")
	flag.Parse()
	if *out == "" || *objects < 1 || *elements < 1 {
		fmt.Fprintln(os.Stderr, "roundtrip: -out DIR is required, -objects and -max-elements must be at least 1")
		os.Exit(2)
	}
	kinds, err := schemaKinds(*schemaPath)
	if err != nil {
		fail(err)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fail(err)
	}
	written, refused, err := write(kinds, *seed, *objects, *elements, *out)
	if err != nil {
		fail(err)
	}
	fmt.Fprintf(os.Stderr, "roundtrip: %d kinds, %d objects written, %d refused by the JSON serializer (seed %d, up to %d elements)\n",
		len(kinds), written, refused, *seed, *elements)
}

// asServed makes the decoded object what a kube-apiserver serves for it,
// where that differs from what its protobuf carries:
//   - a list's items are `[]`, never `null` (the server builds every list
//     answer with a non-nil slice; protobuf has no empty list);
//   - a StatefulSet's volumeClaimTemplates carry `kind: PersistentVolumeClaim`
//     and `apiVersion: v1` (the apps defaulting sets them whenever the
//     server reads one; protobuf carries no embedded TypeMeta).
func asServed(object runtime.Object) error {
	if meta.IsListType(object) {
		items, err := meta.ExtractList(object)
		if err != nil {
			return err
		}
		if len(items) == 0 {
			if err := meta.SetList(object, []runtime.Object{}); err != nil {
				return err
			}
		}
		for _, item := range items {
			if err := asServed(item); err != nil {
				return err
			}
		}
		return meta.SetList(object, items)
	}
	var templates []corev1.PersistentVolumeClaim
	switch s := object.(type) {
	case *appsv1.StatefulSet:
		templates = s.Spec.VolumeClaimTemplates
	case *appsv1beta1.StatefulSet:
		templates = s.Spec.VolumeClaimTemplates
	case *appsv1beta2.StatefulSet:
		templates = s.Spec.VolumeClaimTemplates
	}
	for i := range templates {
		templates[i].APIVersion = "v1"
		templates[i].Kind = "PersistentVolumeClaim"
	}
	return nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "roundtrip:", err)
	os.Exit(1)
}

// schemaKinds reads the group, version and kind of every kind in the schema.
func schemaKinds(path string) ([]schema.GroupVersionKind, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var file struct {
		Kinds [][4]string `json:"kinds"`
	}
	if err := json.Unmarshal(text, &file); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	kinds := make([]schema.GroupVersionKind, 0, len(file.Kinds))
	for _, k := range file.Kinds {
		kinds = append(kinds, schema.GroupVersionKind{Group: k[0], Version: k[1], Kind: k[2]})
	}
	return kinds, nil
}

// write fills `objects` objects of each kind and writes both encodings of
// each, lists and maps with up to `elements` entries; it returns how many
// it wrote and how many JSON could not express.
func write(kinds []schema.GroupVersionKind, seed int64, objects, elements int, out string) (int, int, error) {
	codecs := serializer.NewCodecFactory(scheme.Scheme)
	fill := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(seed), codecs).NumElements(0, elements)
	pb := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	js := jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, jsonserializer.SerializerOptions{})
	var index bytes.Buffer
	written, refused := 0, 0
	for _, gvk := range kinds {
		for range objects {
			object, err := scheme.Scheme.New(gvk)
			if err != nil {
				return 0, 0, fmt.Errorf("%v: %w", gvk, err)
			}
			fill.Fill(object)
			object.GetObjectKind().SetGroupVersionKind(gvk)
			var wire bytes.Buffer
			if err := pb.Encode(object, &wire); err != nil {
				return 0, 0, fmt.Errorf("%v: protobuf: %w", gvk, err)
			}
			stored, _, err := pb.Decode(wire.Bytes(), &gvk, nil)
			if err != nil {
				return 0, 0, fmt.Errorf("%v: decoding its own protobuf: %w", gvk, err)
			}
			stored.GetObjectKind().SetGroupVersionKind(gvk)
			if err := asServed(stored); err != nil {
				return 0, 0, fmt.Errorf("%v: %w", gvk, err)
			}
			var text bytes.Buffer
			if err := js.Encode(stored, &text); err != nil {
				refused++
				continue
			}
			name := fmt.Sprintf("%06d", written)
			if err := os.WriteFile(filepath.Join(out, name+".pb"), wire.Bytes(), 0o644); err != nil {
				return 0, 0, err
			}
			if err := os.WriteFile(filepath.Join(out, name+".json"), text.Bytes(), 0o644); err != nil {
				return 0, 0, err
			}
			fmt.Fprintf(&index, "%s\t%s\t%s\n", name, gvk.GroupVersion(), gvk.Kind)
			written++
		}
	}
	return written, refused, os.WriteFile(filepath.Join(out, "index.tsv"), index.Bytes(), 0o644)
}
