/**
 * Write Herald plugins in JavaScript or TypeScript.
 *
 * A plugin module default-exports a class extending {@link Handler} (a
 * `manifest()` plus `onAdd`, `onUpdate`, `onDelete`, and `validate`, `mutate`
 * for the writes it admits); `herald-build` turns it into a WebAssembly
 * component for the world `herald:plugin/plugin@0.7.0` (notifications
 * arrive in delivery frames, read lazily: see `Handler.oldState` and
 * `Handler.maxBatch`).
 * Logging, cache and index look-ups and configuration are the `log`, `cache`
 * and `config` namespaces; Kubernetes API calls and Events are `kube` and
 * `events`; the plugin's metrics, the work queue and the call's deadline are
 * `metrics`, `workqueue` and `deadline`; outbound HTTP is the standard
 * `fetch`, over `wasi:http`; admission decisions are `Verdict` and
 * `Mutation` on an `AdmissionReview`, for the `Webhook`s and
 * `AdmissionRule`s the manifest declares; `kinds` names common kinds;
 * `Reconciler` and `Controller` write controllers as controller-runtime and
 * kube-rs authors do (`reconcile(request, object)` for a primary kind);
 * `@herald/sdk/testing` is a fake host for unit tests.
 *
 * @module
 */

export { HeraldError } from './errors.js';
export { AdmissionReview, AdmissionRule, FailurePolicy, Mutation, Operation, Verdict, Webhook } from './admission.js';
export { GroupVersionKind } from './kind.js';
export { Delivery, EVENTS, HTTP, Limits, Manifest, Subscription, Verb, WriteRule } from './manifest.js';
export { Metric, MetricKind } from './metrics.js';
export { Context, Event, Update } from './event.js';
export { Handler } from './handler.js';
export { CacheError, Index } from './cache.js';
export { KubeError } from './kube.js';
export { Action, Controller, Reconciler, Request, finalizer, setCondition } from './reconcile.js';

/** Logging into the host's log: `log.info(...)`, `log.warn(...)`, ... */
export * as log from './log.js';
/** Read-only look-ups in the host's informer caches. */
export * as cache from './cache.js';
/** The operator's configuration for this plugin. */
export * as config from './config.js';
/** Reads and writes through the Kubernetes API server: `new kube.Api(...)`. */
export * as kube from './kube.js';
/** Kubernetes Events about objects: `events.warning(...)`, `events.normal(...)`. */
export * as events from './events.js';
/** Helpers for Kubernetes objects as parsed JSON. */
export * as objects from './objects.js';
/** The plugin's own Prometheus metrics: `metrics.counter('alerts_total').with('shop').inc()`. */
export * as metrics from './metrics.js';
/** The work queue: `workqueue.requeueAfter(30_000)`. */
export * as workqueue from './workqueue.js';
/** The call's deadline: `deadline.remainingMs()`. */
export * as deadline from './deadline.js';
/** Which cluster: `cluster.current()`, `cluster.names()`, `cluster.within(name, fn)`. */
export * as cluster from './cluster.js';
/** Common kinds as `GroupVersionKind` constants: `kinds.Pod`, `kinds.Deployment`, ... */
export * as kinds from './kinds.js';
