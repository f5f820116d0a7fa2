package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// syncResult is what --mode=sync prints (and --mode=latency first, once
// synced, so that a harness knows when to start writing).
type syncResult struct {
	SyncedMs    float64 `json:"synced_ms"`
	InformerMs  float64 `json:"informer_ms"`
	Objects     int     `json:"objects"`
	PeakRSSKiB  int64   `json:"peak_rss_kib"`
	CPUMs       float64 `json:"cpu_ms"`
	WatchList   bool    `json:"watch_list"`
	ContentType string  `json:"content_type"`
	// Requests made until synced: with watch-list, a LIST means client-go
	// fell back to listing (the server refused the watch-list).
	Lists      int64 `json:"list_requests"`
	WatchLists int64 `json:"watch_list_requests"`
}

// latencyResult is what --mode=latency prints last.
type latencyResult struct {
	Count       int     `json:"count"`
	P50Ms       float64 `json:"p50_ms"`
	P99Ms       float64 `json:"p99_ms"`
	MaxMs       float64 `json:"max_ms"`
	StoppedBy   string  `json:"stopped_by"`
	WatchList   bool    `json:"watch_list"`
	ContentType string  `json:"content_type"`
}

// syncMode syncs a Pod informer with o.handlers no-op handlers and prints
// a syncResult.
func syncMode(ctx context.Context, client kubernetes.Interface, o options) error {
	pods, err := newPodInformer(client, o.namespace)
	if err != nil {
		return err
	}
	var handles []cache.ResourceEventHandlerRegistration
	for range o.handlers {
		handle, err := pods.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{})
		if err != nil {
			return err
		}
		handles = append(handles, handle)
	}
	result, err := pods.startAndWait(ctx, o, handles)
	if err != nil {
		return err
	}
	return printJSON(result)
}

// latencyMode syncs a Pod informer whose handler records, for every Pod
// update (or add after the initial list) carrying o.annotation, the time
// from that stamp to the handler's entry. It prints a syncResult once
// synced, then a latencyResult when o.flushPod is updated, after
// o.duration, or on SIGINT/SIGTERM, whichever comes first.
func latencyMode(ctx context.Context, client kubernetes.Interface, o options) error {
	pods, err := newPodInformer(client, o.namespace)
	if err != nil {
		return err
	}
	rec := &recorder{annotation: o.annotation, flushPod: o.flushPod, flushed: make(chan struct{})}
	handle, err := pods.informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			if !isInInitialList {
				rec.observe(obj, false)
			}
		},
		UpdateFunc: func(_, obj any) { rec.observe(obj, true) },
	})
	if err != nil {
		return err
	}
	synced, err := pods.startAndWait(ctx, o, []cache.ResourceEventHandlerRegistration{handle})
	if err != nil {
		return err
	}
	if err := printJSON(synced); err != nil {
		return err
	}

	result := latencyResult{WatchList: o.watchList, ContentType: o.contentType}
	select {
	case <-rec.flushed:
		result.StoppedBy = "flush"
	case <-time.After(o.duration):
		result.StoppedBy = "duration"
	case <-ctx.Done():
		result.StoppedBy = "signal"
	}
	rec.mu.Lock()
	latencies := slices.Clone(rec.latencies)
	rec.mu.Unlock()
	slices.Sort(latencies)
	result.Count = len(latencies)
	if result.Count == 0 {
		_ = printJSON(result)
		return fmt.Errorf("no update stamped with %s was seen (stopped by %s)", o.annotation, result.StoppedBy)
	}
	result.P50Ms = percentile(latencies, 50) / 1e6
	result.P99Ms = percentile(latencies, 99) / 1e6
	result.MaxMs = float64(latencies[len(latencies)-1]) / 1e6
	return printJSON(result)
}

// recorder is the latency handler's state. client-go calls a handler from
// one goroutine; the mutex is for reading the results from another.
type recorder struct {
	annotation string
	flushPod   string
	flushed    chan struct{}
	flushOnce  sync.Once

	mu        sync.Mutex
	latencies []int64 // ns
}

func (r *recorder) observe(obj any, update bool) {
	entry := time.Now().UnixNano() // first thing, as the Rust baseline does
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if update && r.flushPod != "" && pod.Name == r.flushPod {
		r.flushOnce.Do(func() { close(r.flushed) })
		return
	}
	written, err := strconv.ParseInt(pod.Annotations[r.annotation], 10, 64)
	if err != nil || written <= 0 {
		return
	}
	r.mu.Lock()
	r.latencies = append(r.latencies, max(entry-written, 0))
	r.mu.Unlock()
}

// percentile of sorted values, interpolating linearly between ranks (as
// bench/src/measure.rs does).
func percentile(sorted []int64, p float64) float64 {
	rank := p / 100 * float64(len(sorted)-1)
	low, high := int(rank), min(int(rank)+1, len(sorted)-1)
	return float64(sorted[low]) + float64(sorted[high]-sorted[low])*(rank-float64(low))
}

// podInformer is the Pod informer of a new SharedInformerFactory.
type podInformer struct {
	factory  informers.SharedInformerFactory
	informer cache.SharedIndexInformer
	lastErr  atomic.Value // error: the last list/watch failure
}

// newPodInformer makes a factory (no resync) and its Pod informer, in all
// namespaces if namespace is "", with a transform that strips managedFields
// before objects are stored and handed to handlers.
func newPodInformer(client kubernetes.Interface, namespace string) (*podInformer, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	pods := &podInformer{factory: factory, informer: factory.Core().V1().Pods().Informer()}
	if err := pods.informer.SetTransform(stripManagedFields); err != nil {
		return nil, err
	}
	// Keep the last list/watch error for the timeout message (client-go
	// itself retries forever and only logs).
	err := pods.informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		pods.lastErr.Store(err)
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	return pods, err
}

// stripManagedFields is the usual informer transform: managedFields are
// large and few programs read them.
func stripManagedFields(obj any) (any, error) {
	if object, err := meta.Accessor(obj); err == nil {
		object.SetManagedFields(nil)
	}
	return obj, nil
}

// startAndWait starts the informer and waits until it and every handle in
// handles have synced, or o.timeout.
func (p *podInformer) startAndWait(ctx context.Context, o options, handles []cache.ResourceEventHandlerRegistration) (syncResult, error) {
	begun := time.Now()
	p.factory.Start(ctx.Done())
	waitCtx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	var synced bool
	if o.wait == "poll" {
		done := []cache.InformerSynced{p.informer.HasSynced}
		for _, handle := range handles {
			done = append(done, handle.HasSynced)
		}
		synced = cache.WaitForCacheSync(waitCtx.Done(), done...)
	} else {
		done := []cache.DoneChecker{p.informer.HasSyncedChecker()}
		for _, handle := range handles {
			done = append(done, handle.HasSyncedChecker())
		}
		synced = cache.WaitFor(waitCtx, "", done...)
	}
	informerMs, syncedMs := millis(time.Since(begun)), sinceStart()
	if !synced {
		if ctx.Err() != nil {
			return syncResult{}, errors.New("interrupted before the Pod informer synced")
		}
		message := fmt.Sprintf("the Pod informer did not sync within %v", o.timeout)
		if err, ok := p.lastErr.Load().(error); ok {
			message += fmt.Sprintf("; last list/watch error: %v", err)
		}
		if failure, ok := lastFailure.Load().(string); ok {
			message += "; last failed request: " + failure
		}
		return syncResult{}, errors.New(message)
	}
	rss, err := peakRSSKiB()
	if err != nil {
		return syncResult{}, fmt.Errorf("reading the peak RSS: %w", err)
	}
	return syncResult{
		SyncedMs:    syncedMs,
		InformerMs:  informerMs,
		Objects:     len(p.informer.GetStore().ListKeys()),
		PeakRSSKiB:  rss,
		CPUMs:       cpuMs(),
		WatchList:   o.watchList,
		ContentType: o.contentType,
		Lists:       lists.Load(),
		WatchLists:  watchLists.Load(),
	}, nil
}
