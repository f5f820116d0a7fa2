// Package reconcile writes controllers as controller-runtime and kube-rs
// authors write them: one Reconcile for a primary kind, the objects it
// owns and the ones it watches mapped to the primary's key, and the
// Result telling the host when to look again.
//
//	type Rollouts struct{}
//
//	func (Rollouts) Reconcile(req reconcile.Request, d *appsv1.Deployment) (reconcile.Result, error) {
//		if d == nil {
//			return reconcile.Result{}, nil // gone: nothing to do
//		}
//		return reconcile.Result{RequeueAfter: 5 * time.Minute}, nil
//	}
//
//	func init() {
//		herald.Register(reconcile.For[appsv1.Deployment](herald.NewManifest("rollouts", "0.1.0")).
//			Owns(herald.KindOf[appsv1.ReplicaSet]()).
//			Complete(Rollouts{}))
//	}
//
// The names are controller-runtime's (For, Owns, Watches, Complete,
// Request, Result) and mean what they mean there; the Rust SDK's
// herald_sdk::reconcile is the same API.
//
// # What the host guarantees, and how
//
// Every kind the controller names is subscribed with coalesced delivery: a
// burst of changes to one object is one call with its latest state, and a
// plugin's calls never overlap, so one key is never reconciled twice at
// once. Each notification is mapped to the primary keys it concerns (its
// own key for the primary kind; its controller owner for an owned kind;
// what the MapFunc returns for a watched kind), and each key is reconciled
// against the cache's current state of the primary object, which is at
// least as new as the notification: every change is followed by a
// reconcile that sees it (level-based, as controller-runtime's).
//
// Result{} is done; Result{RequeueAfter: d} asks for the notification
// again after d (workqueue.RequeueAfter: it maps to the same keys again,
// and a newer change takes its place); an error is retried with the host's
// per-key exponential backoff, as controller-runtime's rate limiter. When
// one notification maps to several keys each is reconciled, the shortest
// requeue wins, and an error retries the notification (reconciles are
// idempotent, as in controller-runtime).
//
// Status conditions need nothing of this package: apimachinery's
// meta.SetStatusCondition, which controller-runtime authors already use,
// builds for wasip1.
package reconcile

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	herald "herald.dev/sdk/go"
	"herald.dev/sdk/go/cache"
	"herald.dev/sdk/go/kube"
	"herald.dev/sdk/go/workqueue"
)

// Request names the primary object to reconcile (controller-runtime's
// reconcile.Request): Namespace is "" for a cluster-scoped kind.
type Request struct {
	Namespace string
	Name      string
}

// String is `namespace/name`, or `name` for a cluster-scoped object.
func (r Request) String() string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

// Result is what a reconcile asks for next (controller-runtime's
// reconcile.Result): the zero value is done until something changes;
// RequeueAfter looks again after that long even if nothing changes. An
// error is not a result: return it to be retried with backoff.
type Result struct {
	RequeueAfter time.Duration
}

// sooner is the sooner of two results: a requeue beats waiting, the
// shorter delay the longer.
func (r Result) sooner(other Result) Result {
	switch {
	case r.RequeueAfter <= 0:
		return other
	case other.RequeueAfter <= 0 || r.RequeueAfter < other.RequeueAfter:
		return r
	}
	return other
}

// Reconciler brings the world in line with one primary object of type T:
// obj is the cache's current state of the object req names, nil when it is
// gone. It is called again after every change of the object or of what
// maps to it.
type Reconciler[T any] interface {
	Reconcile(req Request, obj *T) (Result, error)
}

// Func is a Reconciler written as a function.
type Func[T any] func(req Request, obj *T) (Result, error)

// Reconcile calls f.
func (f Func[T]) Reconcile(req Request, obj *T) (Result, error) { return f(req, obj) }

// MapFunc maps a watched object to the primary keys it concerns
// (controller-runtime's handler.MapFunc). One that needs other objects
// reads them from the cache; an index (herald.IndexByField and friends,
// cache.ByIndex) keeps it to the objects that match.
type MapFunc func(obj *herald.ObjectView) []Request

// source is how a notification of one kind reaches the primary keys.
type source struct {
	kind herald.GroupVersionKind
	// owned: through the controller owner reference; mapFn: through the
	// function; neither: the primary kind itself.
	owned bool
	mapFn MapFunc
}

// Controller is a controller's shape: its primary kind T (For), the kinds
// it owns (Owns) and watches (Watches), and the plugin's manifest, to which
// each is added as a coalesced subscription.
type Controller[T any] struct {
	manifest          *herald.Manifest
	primary           herald.GroupVersionKind
	clusterScoped     bool
	generationChanged bool
	sources           []source
}

// For starts a controller of T (a k8s.io/api type, or one registered with
// herald.RegisterKind) for the plugin manifest describes: T is subscribed
// with coalesced delivery.
func For[T any](manifest *herald.Manifest) *Controller[T] {
	primary := herald.KindOf[T]()
	return &Controller[T]{
		manifest: manifest.Subscribe(herald.NewSubscription(primary).Coalesced()),
		primary:  primary,
		sources:  []source{{kind: primary}},
	}
}

// ClusterScoped says T is cluster-scoped (Namespace, Node, most CRDs of
// cluster scope): an owned object's owner is then looked up without its
// namespace. Go's API types do not carry their scope, which
// controller-runtime learns from the server's discovery.
func (c *Controller[T]) ClusterScoped() *Controller[T] {
	c.clusterScoped = true
	return c
}

// GenerationChanged reconciles T's updates only when its
// metadata.generation changed (controller-runtime's
// predicate.GenerationChangedPredicate on For): a status or metadata
// change, or a periodic resync, reconciles nothing. Adds, deletes,
// requeues, and the owned and watched kinds' changes still reconcile.
func (c *Controller[T]) GenerationChanged() *Controller[T] {
	c.generationChanged = true
	return c
}

// filters says whether GenerationChanged filters out the update u: one of
// the primary kind with the same generation, and a change of the object (a
// requeue re-delivers the same resourceVersion) or a resync.
func (c *Controller[T]) filters(u *herald.Update) (bool, error) {
	if !c.generationChanged || u.Kind.Group != c.primary.Group || u.Kind.Kind != c.primary.Kind {
		return false, nil
	}
	old, err := u.OldView()
	if err != nil {
		return false, err
	}
	updated, err := u.NewView()
	if err != nil {
		return false, err
	}
	return old.Metadata.Generation == updated.Metadata.Generation &&
		(old.Metadata.ResourceVersion != updated.Metadata.ResourceVersion || u.IsResync), nil
}

// Owns also reconciles the controller owner of every object of kind that
// changes: its owner reference with `controller: true` whose kind and
// group are T's (controller-runtime's Owns). kind is subscribed, coalesced.
func (c *Controller[T]) Owns(kind herald.GroupVersionKind) *Controller[T] {
	return c.add(source{kind: kind, owned: true})
}

// Watches also reconciles what mapFn returns for every object of kind that
// changes (controller-runtime's Watches with
// handler.EnqueueRequestsFromMapFunc). kind is subscribed, coalesced.
func (c *Controller[T]) Watches(kind herald.GroupVersionKind, mapFn MapFunc) *Controller[T] {
	if mapFn == nil {
		panic(fmt.Sprintf("reconcile: Watches(%s) needs a MapFunc", kind))
	}
	return c.add(source{kind: kind, mapFn: mapFn})
}

func (c *Controller[T]) add(s source) *Controller[T] {
	c.manifest = c.manifest.Subscribe(herald.NewSubscription(s.kind).Coalesced())
	c.sources = append(c.sources, s)
	return c
}

// Manifest is the plugin's manifest, with the controller's subscriptions.
func (c *Controller[T]) Manifest() *herald.Manifest { return c.manifest }

// Complete makes r the controller's reconciler and returns the plugin's
// handler, for herald.Register.
func (c *Controller[T]) Complete(r Reconciler[T]) herald.Handler {
	return &handler[T]{controller: c, reconciler: r}
}

// requests are the primary keys a notification of kind about text
// concerns.
func (c *Controller[T]) requests(kind herald.GroupVersionKind, text string) ([]Request, error) {
	i := slices.IndexFunc(c.sources, func(s source) bool {
		return s.kind.Group == kind.Group && s.kind.Kind == kind.Kind
	})
	if i < 0 {
		return nil, fmt.Errorf("a notification of %s, which the controller neither reconciles, owns nor watches", kind)
	}
	view, err := herald.ParseView(text)
	if err != nil {
		return nil, err
	}
	meta := &view.Metadata
	switch s := c.sources[i]; {
	case s.mapFn != nil:
		return s.mapFn(view), nil
	case s.owned:
		owner := meta.Controller()
		if owner == nil || owner.Kind != c.primary.Kind || groupOf(owner.APIVersion) != c.primary.Group {
			return nil, nil
		}
		namespace := meta.Namespace
		if c.clusterScoped {
			namespace = ""
		}
		return []Request{{Namespace: namespace, Name: owner.Name}}, nil
	default:
		return []Request{{Namespace: meta.Namespace, Name: meta.Name}}, nil
	}
}

// groupOf is the group of an apiVersion (`apps/v1` is apps, `v1` the core
// group, "").
func groupOf(apiVersion string) string {
	group, _, found := strings.Cut(apiVersion, "/")
	if !found {
		return ""
	}
	return group
}

// handler is the herald.Handler of a controller: it maps each notification
// to its primary keys and reconciles each.
type handler[T any] struct {
	controller *Controller[T]
	reconciler Reconciler[T]
}

func (h *handler[T]) Manifest() *herald.Manifest { return h.controller.manifest }

func (h *handler[T]) OnAdd(e *herald.Event) error { return h.notified(e.Kind, e.JSON) }

func (h *handler[T]) OnUpdate(u *herald.Update) error {
	if filtered, err := h.controller.filters(u); filtered || err != nil {
		return err
	}
	return h.notified(u.Kind, u.NewJSON)
}

func (h *handler[T]) OnDelete(e *herald.Event) error { return h.notified(e.Kind, e.JSON) }

// notified reconciles every key the notification concerns, each against
// the cache's current state; every key is tried, the first failure is
// returned, and the soonest requeue any asked for is requested.
func (h *handler[T]) notified(kind herald.GroupVersionKind, text string) error {
	requests, err := h.controller.requests(kind, text)
	if err != nil {
		return err
	}
	var next Result
	var failed error
	for _, req := range requests {
		result, err := h.reconcile(req)
		if err != nil {
			if failed == nil {
				failed = err
			}
			continue
		}
		next = next.sooner(result)
	}
	if failed != nil {
		return failed
	}
	if next.RequeueAfter > 0 {
		workqueue.RequeueAfter(next.RequeueAfter)
	}
	return nil
}

func (h *handler[T]) reconcile(req Request) (result Result, err error) {
	obj, err := cache.Get[T](req.Namespace, req.Name)
	if err != nil {
		return Result{}, fmt.Errorf("reading %s %s: %w", h.controller.primary, req, err)
	}
	result, err = h.reconciler.Reconcile(req, obj)
	if err != nil {
		return Result{}, fmt.Errorf("reconciling %s: %w", req, err)
	}
	if result.RequeueAfter < 0 {
		return Result{}, fmt.Errorf("reconciling %s: a negative RequeueAfter (%s)", req, result.RequeueAfter)
	}
	return result, nil
}

// Finalizer runs a reconcile with name as obj's finalizer, as kube-rs's
// finalizer and controller-runtime's controllerutil finalizer helpers: a
// live object without it gets it added (the change brings the next
// reconcile, which applies); a live object with it is applied; an object
// being deleted with it is cleaned up, then the finalizer removed; an
// object being deleted without it needs nothing.
//
// Cleanup's error keeps the finalizer, and the cleanup runs again, so it
// must be idempotent. Both writes are merge patches carrying the
// resourceVersion read, so a concurrent change fails with a conflict and
// the reconcile is retried. The plugin needs `patch` on the kind in its
// write rules. obj is a pointer to a k8s.io/api type or a registered one
// (anything with metav1.ObjectMeta embedded).
//
// A state of the object this instance already wrote its finalizer change
// at (the same resourceVersion: the cache has not caught up with the write
// yet, and another notification mapped here) is left alone: the write's
// own change brings the next reconcile. So a cleanup that succeeded is not
// run again on the stale state, and an add does not fail with a conflict.
// Nor is a cleanup that succeeded run again when the finalizer's removal
// fails (a conflict with a write that landed after the deletion, say): the
// instance remembers the object (by UID) as cleaned up, and the retry only
// removes the finalizer. Only a new instance (a host restart, a hot swap, a
// trap) cleans up again, as any controller stopped between the two steps.
func Finalizer[P metav1.Object](obj P, name string, apply, cleanup func(P) (Result, error)) (Result, error) {
	kind, ok := herald.KindOfType(reflect.TypeOf(obj))
	if !ok {
		return Result{}, fmt.Errorf("finalizer %s: the kind of %T is unknown: register it with herald.RegisterKind", name, obj)
	}
	if obj.GetName() == "" {
		return Result{}, errors.New("finalizer " + name + ": the object has no name")
	}
	key := fmt.Sprintf("%s %s/%s %s", kind, obj.GetNamespace(), obj.GetName(), name)
	version := obj.GetResourceVersion()
	if version != "" && written.holds(key, version) {
		return Result{}, nil
	}
	finalizers := obj.GetFinalizers()
	has := slices.Contains(finalizers, name)
	write := func(finalizers []string, doing string) error {
		patch := map[string]any{"metadata": map[string]any{
			"finalizers":      finalizers,
			"resourceVersion": version,
		}}
		if _, err := kube.NewDynamic(kind, obj.GetNamespace()).Patch(obj.GetName(), kube.MergePatch(patch)); err != nil {
			return fmt.Errorf("%s finalizer %s: %w", doing, name, err)
		}
		if version != "" {
			written.keep(key, version)
		}
		return nil
	}
	switch deleting := obj.GetDeletionTimestamp() != nil; {
	case !deleting && !has:
		return Result{}, write(append(slices.Clone(finalizers), name), "adding")
	case !deleting:
		return apply(obj)
	case has:
		var result Result
		uid := string(obj.GetUID())
		if uid == "" || !cleaned.holds(key, uid) {
			var err error
			if result, err = cleanup(obj); err != nil {
				return Result{}, err
			}
			if uid != "" {
				cleaned.keep(key, uid)
			}
		}
		kept := slices.DeleteFunc(slices.Clone(finalizers), func(f string) bool { return f == name })
		return result, write(kept, "removing")
	}
	return Result{}, nil
}

// remembered is how many objects each of an instance's finalizer records
// keeps; the oldest is forgotten first (a forgotten one costs at most a
// repeated, idempotent write or cleanup).
const remembered = 1024

// finalizerRecord holds one value per key (kind, object and finalizer),
// the latest, for the remembered latest keys, oldest first.
type finalizerRecord struct {
	keys   []string
	values map[string]string
}

// The instance's records (calls never overlap: no lock): the
// resourceVersion each finalizer change was written at, and the UID of
// the object each cleanup succeeded for.
var (
	written = finalizerRecord{values: map[string]string{}}
	cleaned = finalizerRecord{values: map[string]string{}}
)

// holds says whether the record keeps value for key.
func (r *finalizerRecord) holds(key, value string) bool {
	v, ok := r.values[key]
	return ok && v == value
}

// keep records value for key, replacing what it kept of key.
func (r *finalizerRecord) keep(key, value string) {
	if _, ok := r.values[key]; ok {
		r.keys = slices.DeleteFunc(r.keys, func(k string) bool { return k == key })
	} else if len(r.keys) == remembered {
		delete(r.values, r.keys[0])
		r.keys = r.keys[1:]
	}
	r.keys = append(r.keys, key)
	r.values[key] = value
}
