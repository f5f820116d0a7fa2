package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Requests in flight while loading (as bench/src/cluster.rs fills) and most
// stamped writes in flight (its WRITES_IN_FLIGHT).
const (
	loadConcurrency = 16
	writesInFlight  = 64
)

// loadMode creates o.namespace, o.pods variations of the --pod-file Pod in
// it and the flush Pod. Pods that already exist are left as they are.
func loadMode(ctx context.Context, client kubernetes.Interface, o options) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	base, err := readPod(o.podFile, o.managedFields)
	if err != nil {
		return err
	}
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.namespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, namespace, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", o.namespace, err)
	}
	flush := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: o.flushPod, Namespace: o.namespace},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}},
	}

	begun := time.Now()
	var created, existed atomic.Int64
	var failed atomic.Value // error
	create := func(pod *corev1.Pod) {
		_, err := client.CoreV1().Pods(o.namespace).Create(ctx, pod, metav1.CreateOptions{})
		switch {
		case err == nil:
			created.Add(1)
		case apierrors.IsAlreadyExists(err):
			existed.Add(1)
		default:
			failed.CompareAndSwap(nil, fmt.Errorf("creating Pod %s: %w", pod.Name, err))
			cancel()
		}
	}
	indexes := make(chan int)
	var workers sync.WaitGroup
	for range loadConcurrency {
		workers.Go(func() {
			for i := range indexes {
				create(variation(base, o.namespace, i))
			}
		})
	}
feed:
	for i := range o.pods {
		select {
		case indexes <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(indexes)
	workers.Wait()
	if o.flushPod != "" && ctx.Err() == nil {
		create(flush)
	}
	if err, ok := failed.Load().(error); ok {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("loading stopped after %d Pods: %w", created.Load()+existed.Load(), ctx.Err())
	}
	return printJSON(map[string]any{
		"created":        created.Load(),
		"existed":        existed.Load(),
		"seconds":        time.Since(begun).Seconds(),
		"namespace":      o.namespace,
		"pod_bytes":      jsonSize(variation(base, o.namespace, 0)),
		"base_name":      base.Name,
		"flush_pod":      o.flushPod,
		"managed_fields": o.managedFields,
	})
}

// writeMode stamps Pods 0..o.pods-1 of --mode=load in turn at o.rate per
// second for o.duration (a merge patch of o.annotation, stamped just before
// it is sent, at most writesInFlight at once, as bench/src/cluster.rs
// does), then updates the flush Pod.
func writeMode(ctx context.Context, client kubernetes.Interface, o options) error {
	base, err := readPod(o.podFile, false)
	if err != nil {
		return err
	}
	pods := client.CoreV1().Pods(o.namespace)
	stamp := func(name, annotation string) error {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, annotation, strconv.FormatInt(time.Now().UnixNano(), 10))
		_, err := pods.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	total := int(o.rate * o.duration.Seconds())
	permits := make(chan struct{}, writesInFlight)
	var writers sync.WaitGroup
	var failures atomic.Int64
	begun := time.Now()
	for i := 0; i < total && ctx.Err() == nil; i++ {
		time.Sleep(time.Until(begun.Add(time.Duration(float64(i) / o.rate * float64(time.Second)))))
		permits <- struct{}{}
		writers.Go(func() {
			defer func() { <-permits }()
			if err := stamp(podName(base.Name, i%o.pods), o.annotation); err != nil {
				if failures.Add(1) == 1 {
					fmt.Fprintf(os.Stderr, "clientgo: stamping a Pod: %v\n", err)
				}
			}
		})
	}
	writers.Wait()
	elapsed := time.Since(begun).Seconds()
	if o.flushPod != "" {
		if err := stamp(o.flushPod, "herald.bench/flush"); err != nil {
			return fmt.Errorf("updating the flush Pod: %w", err)
		}
	}
	if err := printJSON(map[string]any{"writes": total, "failed": failures.Load(), "rate": float64(total) / elapsed}); err != nil {
		return err
	}
	if failures.Load() > 0 {
		return fmt.Errorf("%d of %d writes failed", failures.Load(), total)
	}
	return nil
}

// readPod reads the Pod of path, without the fields the server sets, with
// managedFields as an API server would write them if managedFields.
func readPod(path string, managedFields bool) (*corev1.Pod, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the Pod to load: %w", err)
	}
	var generic map[string]any
	if err := json.Unmarshal(text, &generic); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if managedFields {
		generic["metadata"].(map[string]any)["managedFields"] = managedFieldsOf(generic)
		if text, err = json.Marshal(generic); err != nil {
			return nil, err
		}
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(text, pod); err != nil {
		return nil, fmt.Errorf("%s is not a Pod: %w", path, err)
	}
	pod.UID, pod.ResourceVersion = "", ""
	return pod, nil
}

// variation is Pod index of the load: base with its own name, namespace and
// labels (as bench/src/data.rs makes them).
func variation(base *corev1.Pod, namespace string, index int) *corev1.Pod {
	pod := base.DeepCopy()
	pod.Name = podName(base.Name, index)
	pod.Namespace = namespace
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels["herald.bench/index"] = strconv.Itoa(index)
	pod.Labels["herald.bench/shard"] = strconv.Itoa(index % 16)
	return pod
}

func podName(base string, index int) string { return fmt.Sprintf("%s-%06d", base, index) }

func jsonSize(v any) int {
	text, _ := json.Marshal(v)
	return len(text)
}

// managedFieldsOf is what bench/src/data.rs gives its Pods: the controller
// that created the Pod owns metadata and spec, the kubelet owns status.
func managedFieldsOf(pod map[string]any) []any {
	metadata := map[string]any{}
	for key, value := range pod["metadata"].(map[string]any) {
		switch key {
		case "name", "namespace", "uid", "resourceVersion", "creationTimestamp":
		default:
			metadata[key] = value
		}
	}
	entry := func(manager, subresource string, fields map[string]any) map[string]any {
		entry := map[string]any{
			"manager":    manager,
			"operation":  "Update",
			"apiVersion": "v1",
			"time":       "2026-11-01T10:00:00Z",
			"fieldsType": "FieldsV1",
			"fieldsV1":   fields,
		}
		if subresource != "" {
			entry["subresource"] = subresource
		}
		return entry
	}
	return []any{
		entry("kube-controller-manager", "", map[string]any{"f:metadata": fieldsV1(metadata), "f:spec": fieldsV1(pod["spec"])}),
		entry("kubelet", "status", map[string]any{"f:status": fieldsV1(pod["status"])}),
	}
}

// fieldsV1 is the fieldsV1 set of value: "f:<key>" per field,
// `k:{"name":…}` per named list item ("i:<n>" otherwise), {} for leaves.
func fieldsV1(value any) map[string]any {
	out := map[string]any{}
	switch value := value.(type) {
	case map[string]any:
		out["."] = map[string]any{}
		for key, item := range value {
			out["f:"+key] = fieldsV1(item)
		}
	case []any:
		for position, item := range value {
			key := "i:" + strconv.Itoa(position)
			if object, ok := item.(map[string]any); ok {
				if name, ok := object["name"]; ok {
					text, _ := json.Marshal(name)
					key = `k:{"name":` + string(text) + `}`
				}
			}
			out[key] = fieldsV1(item)
		}
	}
	return out
}
