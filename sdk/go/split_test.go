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
		got, err := splitObject(doc)
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
		_, err := splitObject([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("splitObject(%.30q): %v, want %q", doc, err, want)
		}
	}
	if fields, err := splitObject([]byte(" null ")); fields != nil || err != nil {
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
			if _, err := splitObject([]byte(doc)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
