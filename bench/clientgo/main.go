// Command clientgo is Herald's client-go baseline (issue 32).
//
// It runs a typed Pod SharedInformer, the way most client-go programs do, and
// reports either how long it took to sync and how much memory it peaked at
// (--mode=sync) or how long Pod updates took from write to handler
// (--mode=latency). Two helper modes let it be tested alone: --mode=load
// creates Pods shaped like the benchmark Pods, --mode=write stamps them at a
// steady rate. See README.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	// Imported first among this program's packages so that its clock is read
	// before client-go's package initialisation; see the package.
	"herald.dev/bench/clientgo/internal/started"
)

// options are the command-line flags.
type options struct {
	mode        string
	kubeconfig  string
	namespace   string
	watchList   bool
	contentType string
	wait        string
	handlers    int
	timeout     time.Duration
	verbose     bool

	// --mode=latency
	duration   time.Duration
	annotation string
	flushPod   string

	// --mode=load and --mode=write
	pods          int
	podFile       string
	managedFields bool
	rate          float64
}

func main() {
	var o options
	flag.StringVar(&o.mode, "mode", "sync", "sync, latency, load or write")
	flag.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file (default $KUBECONFIG)")
	flag.StringVar(&o.namespace, "namespace", "", "namespace to watch (default all); to load and write (default \"bench\")")
	flag.BoolVar(&o.watchList, "watch-list", true, "client-go's WatchListClient feature: sync by a streaming WATCH (sendInitialEvents=true) instead of a LIST")
	flag.StringVar(&o.contentType, "content-type", "json", "json or protobuf")
	flag.StringVar(&o.wait, "wait", "checker", "how to wait for the sync: checker (cache.WaitFor, no polling) or poll (cache.WaitForCacheSync, polls every 100 ms)")
	flag.IntVar(&o.handlers, "handlers", 1, "no-op event handlers that must have seen the initial list (--mode=sync)")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up if not synced (or loaded) by then")
	flag.BoolVar(&o.verbose, "verbose", false, "log every request (method, URL, status, response content type) to stderr")
	flag.DurationVar(&o.duration, "duration", time.Minute, "--mode=latency: record for at most this long; --mode=write: write for this long")
	flag.StringVar(&o.annotation, "annotation", "herald.bench/written-ns", "annotation holding the write time, ns since the Unix epoch")
	flag.StringVar(&o.flushPod, "flush-pod", "latency-flush", "--mode=latency: stop recording when this Pod is updated (\"\" to stop only after --duration)")
	flag.IntVar(&o.pods, "pods", 10000, "--mode=load and --mode=write: number of Pods")
	flag.StringVar(&o.podFile, "pod-file", "../data/pod-4k.json", "--mode=load and --mode=write: the Pod to make variations of")
	flag.BoolVar(&o.managedFields, "managed-fields", true, "--mode=load: give the Pods managedFields as an API server writes them")
	flag.Float64Var(&o.rate, "rate", 1000, "--mode=write: updates per second")
	flag.Parse()

	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "clientgo: %v\n", err)
		os.Exit(1)
	}
}

func run(o options) error {
	// Set before client-go reads any feature gate: from now on the flag, not
	// $KUBE_FEATURE_WatchListClient or client-go's default, decides.
	clientfeatures.ReplaceFeatureGates(watchListGate{clientfeatures.FeatureGates(), o.watchList})

	config, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("loading the kubeconfig %q: %w", o.kubeconfig, err)
	}
	switch o.contentType {
	case "json":
		config.ContentType = runtime.ContentTypeJSON
	case "protobuf":
		// As kube-controller-manager does: protobuf preferred, JSON
		// accepted (the server answers JSON for kinds without protobuf).
		config.ContentType = runtime.ContentTypeProtobuf
		config.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	default:
		return fmt.Errorf("--content-type must be json or protobuf, not %q", o.contentType)
	}
	config.Wrap(func(next http.RoundTripper) http.RoundTripper { return countRequests{next, o.verbose} })

	if o.wait != "checker" && o.wait != "poll" {
		return fmt.Errorf("--wait must be checker or poll, not %q", o.wait)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch o.mode {
	case "sync":
		return syncMode(ctx, newClient(config), o)
	case "latency":
		return latencyMode(ctx, newClient(config), o)
	case "load", "write":
		// Many requests at once: no client-side rate limit (default 5/s).
		config.QPS = -1
		if o.namespace == "" {
			o.namespace = "bench"
		}
		if o.mode == "load" {
			return loadMode(ctx, newClient(config), o)
		}
		return writeMode(ctx, newClient(config), o)
	default:
		return fmt.Errorf("--mode must be sync, latency, load or write, not %q", o.mode)
	}
}

func newClient(config *rest.Config) kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(config)
}

// watchListGate is client-go's feature gates with WatchListClient set by the
// --watch-list flag. The reflector reads the gate when it is created.
type watchListGate struct {
	clientfeatures.Gates
	watchList bool
}

func (g watchListGate) Enabled(f clientfeatures.Feature) bool {
	if f == clientfeatures.WatchListClient {
		return g.watchList
	}
	return g.Gates.Enabled(f)
}

var (
	// Requests made so far: LISTs and watch-list WATCHes (sendInitialEvents=true).
	lists, watchLists atomic.Int64
	// The last request that failed or was answered with an error status
	// (client-go retries those quietly).
	lastFailure atomic.Value // string
)

// countRequests counts LISTs and watch-lists, notes failures and, if verbose, logs each
// request with the status and content type of its response to stderr (for a
// watch, when the response headers arrive).
type countRequests struct {
	next    http.RoundTripper
	verbose bool
}

func (c countRequests) RoundTrip(req *http.Request) (*http.Response, error) {
	query := req.URL.Query()
	switch {
	case req.Method != http.MethodGet:
	case query.Get("watch") != "true":
		lists.Add(1)
	case query.Get("sendInitialEvents") == "true":
		watchLists.Add(1)
	}
	begun := time.Now()
	resp, err := c.next.RoundTrip(req)
	switch {
	case err != nil:
		lastFailure.Store(fmt.Sprintf("%s %s: %v", req.Method, req.URL, err))
	case resp.StatusCode >= 400:
		lastFailure.Store(fmt.Sprintf("%s %s: %s", req.Method, req.URL, resp.Status))
	}
	if c.verbose {
		took := time.Since(begun).Round(time.Microsecond)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s %s (Accept: %s) -> error after %v: %v\n", req.Method, req.URL, req.Header.Get("Accept"), took, err)
		} else {
			fmt.Fprintf(os.Stderr, "%s %s (Accept: %s) -> %d %s after %v\n", req.Method, req.URL, req.Header.Get("Accept"), resp.StatusCode, resp.Header.Get("Content-Type"), took)
		}
	}
	return resp, err
}

// sinceStart is the time since the process started, in ms.
func sinceStart() float64 { return millis(time.Since(started.At)) }

func millis(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1e3
}

// printJSON writes v as one line of JSON to stdout.
func printJSON(v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Printf("%s\n", line)
	return err
}

// cpuMs is the CPU time (user and system) this process has used so far, in
// ms: steadier than wall-clock time on a shared machine, and it separates the
// client's work from the server's.
func cpuMs() float64 {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return -1
	}
	return float64(usage.Utime.Nano()+usage.Stime.Nano()) / 1e6
}

// peakRSSKiB is VmHWM from /proc/self/status: the most memory this process
// has had resident, in KiB.
func peakRSSKiB() (int64, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if value, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		}
	}
	return 0, errors.New("no VmHWM in /proc/self/status")
}
