package main

import (
	"encoding/json"
	"testing"
)

func TestPercentileInterpolatesAsTheRustBench(t *testing.T) {
	sorted := []int64{10, 20, 30, 40}
	for _, c := range []struct {
		p    float64
		want float64
	}{{0, 10}, {50, 25}, {99, 39.7}, {100, 40}} {
		if got := percentile(sorted, c.p); got < c.want-1e-9 || got > c.want+1e-9 {
			t.Errorf("percentile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if got := percentile([]int64{7}, 99); got != 7 {
		t.Errorf("percentile of one value = %v, want 7", got)
	}
}

func TestFieldsV1KeysListItemsByName(t *testing.T) {
	var spec any
	if err := json.Unmarshal([]byte(`{"containers":[{"name":"main","image":"x"}],"tolerations":[{"key":"k"}]}`), &spec); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(fieldsV1(spec))
	want := `{".":{},"f:containers":{"k:{\"name\":\"main\"}":{".":{},"f:image":{},"f:name":{}}},"f:tolerations":{"i:0":{".":{},"f:key":{}}}}`
	if string(got) != want {
		t.Errorf("fieldsV1 = %s\nwant       %s", got, want)
	}
}

func TestStripManagedFields(t *testing.T) {
	pod, err := readPod("../data/pod-4k.json", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.ManagedFields) != 2 {
		t.Fatalf("the loaded Pod has %d managedFields entries, want 2", len(pod.ManagedFields))
	}
	if _, err := stripManagedFields(pod); err != nil || pod.ManagedFields != nil {
		t.Errorf("managedFields left after the transform: %v (err %v)", pod.ManagedFields, err)
	}
}
