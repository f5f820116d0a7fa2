package herald

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// benchPods are the benchmark's Pods (bench/data), real shapes.
func benchPods(t testing.TB) [][]byte {
	var pods [][]byte
	for _, name := range []string{"pod-4k.json", "pod-16k.json"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "bench", "data", name))
		if err != nil {
			t.Fatalf("the benchmark's Pods: %v", err)
		}
		pods = append(pods, data)
	}
	return pods
}

func TestSplitObjectAgreesWithEncodingJSON(t *testing.T) {
	docs := append(benchPods(t),
		[]byte(`{}`),
		[]byte(` { "a" : [ 1 , -2.5e+3 , true , false , null , "x\"y" , { } , [ ] ] ,
		  "b\u0041" : {"c": {"d": ["\\", "\u00e9"]}}, "e": "" } `),
	)
	for _, doc := range docs {
		var want map[string]json.RawMessage
		if err := json.Unmarshal(doc, &want); err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		got, err := splitObject(doc, nil)
		if err != nil {
			t.Fatalf("splitObject(%.40s…): %v", doc, err)
		}
		if len(got) != len(want) {
			t.Fatalf("fields: %v against %v", keys(got), keys(want))
		}
		for name, raw := range want {
			if !bytes.Equal(got[name], raw) {
				t.Fatalf("field %q: %s against %s", name, got[name], raw)
			}
		}
	}
}

func keys(m map[string]json.RawMessage) []string {
	var names []string
	for name := range m {
		names = append(names, name)
	}
	return names
}

func TestSplitObjectRefusesWhatIsNotAnObject(t *testing.T) {
	for doc, want := range map[string]string{
		``:                  "expected an object, at the end",
		`[]`:                "expected an object",
		`{"a": 1`:           "expected ',' or '}'",
		`{"a" 1}`:           "expected ':'",
		`{"a": }`:           "expected a value",
		`{"a": tru}`:        "expected a value",
		`{"a": "b}`:         "an unterminated string",
		"{\"a\": \"\x01\"}": "a control character",
		`{"a": 1} x`:        "text after the object",
		`{"a": [1 2]}`:      "expected ',' or ']'",
		`{"a": {"b" 1}}`:    "expected ':'",
		`{"a": 1, "a": 2}`:  "duplicate field `a`",
		`{a: 1}`:            "expected a string",
		`{"a": 1,}`:         "expected a string",
		`{"a": [` + strings.Repeat("[", 10001) + `]}`: "nested too deeply",
	} {
		_, err := splitObject([]byte(doc), nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("splitObject(%.30q): %v, want %q", doc, err, want)
		}
	}
	if fields, err := splitObject([]byte(" null "), nil); fields != nil || err != nil {
		t.Fatalf("null: %v %v", fields, err)
	}
}

func TestTheViewReadsTheBenchPodsAsEncodingJSONDoes(t *testing.T) {
	for _, doc := range benchPods(t) {
		view, err := ParseView(string(doc))
		if err != nil {
			t.Fatal(err)
		}
		var whole struct {
			APIVersion string   `json:"apiVersion"`
			Kind       string   `json:"kind"`
			Metadata   MetaView `json:"metadata"`
		}
		if err := json.Unmarshal(doc, &whole); err != nil {
			t.Fatal(err)
		}
		if view.APIVersion != whole.APIVersion || view.Kind != whole.Kind || !reflect.DeepEqual(view.Metadata, whole.Metadata) {
			t.Fatalf("view %+v against %+v", view, whole)
		}
		if !reflect.DeepEqual(view.FieldNames(), []string{"spec", "status"}) {
			t.Fatalf("fields: %v", view.FieldNames())
		}
	}
}

func BenchmarkViewOfA4KPod(b *testing.B) {
	doc := string(benchPods(b)[0])
	b.Run("view", func(b *testing.B) {
		for range b.N {
			if _, err := ParseView(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json-fields", func(b *testing.B) {
		for range b.N {
			var fields map[string]json.RawMessage
			if err := json.Unmarshal([]byte(doc), &fields); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("split", func(b *testing.B) {
		for range b.N {
			if _, err := splitObject([]byte(doc), nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestTheMetadataReaderAgreesWithEncodingJSON(t *testing.T) {
	for _, doc := range []string{
		`null`,
		`{}`,
		`{"name": null, "labels": null, "ownerReferences": null, "finalizers": null, "generation": null}`,
		`{"labels": {}, "annotations": {"a": ""}, "ownerReferences": [], "finalizers": []}`,
		`{"name": "caf\u00e9", "namespace": "a\"b", "labels": {"k\u0041": "v\n"}}`,
		`{"generation": -42, "uid": "u", "name": "first", "name": "last"}`,
		`{"ownerReferences": [null, {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "x",
		  "controller": true, "blockOwnerDeletion": true}, {"controller": null}], "finalizers": ["a", null, "b"]}`,
		`{"managedFields": [{"manager": "kubectl", "fieldsV1": {"f:metadata": {}}}], "selfLink": "/x",
		  "deletionTimestamp": "2026-11-30T00:00:00Z", "creationTimestamp": null, "generateName": "web-"}`,
		` { "resourceVersion" : "7" , "labels" : { "a" : "1" , "b" : "2" } } `,
		`{"annotations": {"last-applied": "` + strings.Repeat(`{\"spec\": 1} `, 40) + `"}}`,
	} {
		var want, got MetaView
		if err := json.Unmarshal([]byte(doc), &want); err != nil {
			t.Fatalf("encoding/json on %s: %v", doc, err)
		}
		if err := readMeta([]byte(doc), &got); err != nil {
			t.Fatalf("readMeta(%s): %v", doc, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("readMeta(%s):\n%+v\nencoding/json:\n%+v", doc, got, want)
		}
	}
}

func TestTheMetadataReaderNamesTheFieldAtFault(t *testing.T) {
	for doc, want := range map[string]string{
		`[]`:                                   "expected an object",
		`{"name": 5}`:                          "`name`: invalid JSON: expected a string",
		`{"generation": 1.5}`:                  "`generation`: expected an integer, found \"1.5\"",
		`{"generation": 99999999999999999999}`: "`generation`: expected an integer",
		`{"generation": "1"}`:                  "`generation`: invalid JSON: expected an integer",
		`{"labels": {"app": 1}}`:               "`labels`: `app`: invalid JSON: expected a string",
		`{"labels": []}`:                       "`labels`: invalid JSON: expected an object",
		`{"finalizers": "a"}`:                  "`finalizers`: invalid JSON: expected an array",
		`{"ownerReferences": [{"controller": "yes"}]}`: "`ownerReferences`: `controller`: invalid JSON: expected true or false",
		`{"managedFields": [1 2]}`:                     "expected ',' or ']'",
		`{"name": "a"} x`:                              "text after the object",
		"{\"name\": \"a\x01\"}":                        "a control character",
	} {
		var m MetaView
		err := readMeta([]byte(doc), &m)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("readMeta(%s): %v, want %q", doc, err, want)
		}
	}
	_, err := ParseView(`{"kind": "Pod", "metadata": {"labels": {"app": 1}}}`)
	if err == nil || !strings.Contains(err.Error(), "reading the object: `metadata`: `labels`: `app`") {
		t.Fatalf("ParseView: %v, want the path to the bad label", err)
	}
}

func TestStringsOfEveryLengthAndStopAreScannedAsEncodingJSONDoes(t *testing.T) {
	// Eight bytes are passed at a time: put each stopping byte at every
	// place of a word, in strings long and short.
	for n := range 20 {
		for _, stop := range []string{`\"`, `\\`, `\n`, `\u00e9`, "é"} {
			for at := 0; at <= n; at++ {
				text := strings.Repeat("x", at) + stop + strings.Repeat("y", n-at)
				doc := `{"a":"` + text + `","b":1}`
				fields, err := splitObject([]byte(doc), nil)
				if err != nil || string(fields["a"]) != `"`+text+`"` || string(fields["b"]) != "1" {
					t.Fatalf("split %s: %v %q", doc, err, fields)
				}
			}
		}
		for _, bad := range []string{"\x01", "\x1f", "\t"} {
			doc := `{"a":"` + strings.Repeat("x", n) + bad + `"}`
			if _, err := splitObject([]byte(doc), nil); err == nil || !strings.Contains(err.Error(), "a control character") {
				t.Fatalf("split %q: %v, want a control character refused", doc, err)
			}
		}
		doc := `{"a":"` + strings.Repeat("x", n)
		if _, err := splitObject([]byte(doc), nil); err == nil || !strings.Contains(err.Error(), "unterminated") {
			t.Fatalf("split %q: %v, want an unterminated string", doc, err)
		}
	}
}

func BenchmarkMetaOfA4KPod(b *testing.B) {
	fields, _ := splitObject(benchPods(b)[0], nil)
	raw := fields["metadata"]
	b.Run("reader", func(b *testing.B) {
		for range b.N {
			var m MetaView
			if err := readMeta(raw, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for range b.N {
			var m MetaView
			if err := json.Unmarshal(raw, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
