/**
 * A fake host for unit-testing plugins under `node --test`, without wasm:
 * importing this module routes every host call of the SDK here (log, cache
 * and index look-ups, config, kube, events, metrics, workqueue, deadline),
 * and replaces `globalThis.fetch` with one answered by {@link http}'s
 * scripts, so a plugin's requests never leave the process. Mirrors the Rust
 * SDK's `testing` module.
 *
 * Metric updates are recorded ({@link metricUpdates}) and summed per series
 * ({@link metric}, {@link observations}); {@link declare} makes the fake host
 * check them against the manifest's definitions as the host does, and serve
 * its indexes to `cache.byIndex`. Requeue requests are recorded
 * ({@link requeues}).
 *
 * Kubernetes calls and events are recorded ({@link takeKubeCalls},
 * {@link takeEvents}) and answered from scripts ({@link scriptKube},
 * {@link scriptEvents}); unscripted, a `get` throws a `not-found`
 * `KubeError`, a create, replace, merge or strategic patch, or apply returns
 * the body it was sent (a JSON patch: the object's identity only), a delete
 * and a publish succeed. {@link enforce} makes the fake host refuse, as the
 * host does, calls outside the manifest's write rules and events without the
 * `events` capability.
 *
 * ```js
 * import { test } from 'node:test';
 * import assert from 'node:assert/strict';
 * import * as testing from '@herald/sdk/testing';
 * import Plugin from '../src/plugin.js';
 *
 * test('logs each add', () => {
 *   testing.reset();
 *   new Plugin().onAdd(testing.added({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web-0', namespace: 'shop' } }));
 *   assert.deepEqual(testing.takeMessages(), ['added pod=shop/web-0']);
 * });
 * ```
 *
 * Admission decisions are tested the same way: {@link creating},
 * {@link updating} and {@link deleting} build the `AdmissionReview` the API
 * server would send, for `validate` and `mutate`:
 *
 * ```js
 * test('refuses :latest', () => {
 *   const verdict = new Plugin().validate(testing.creating(pod('web:latest')));
 *   assert.equal(verdict.allowed, false);
 * });
 * ```
 *
 * State is per process (`node --test` runs each test file in its own
 * process); call {@link reset} at the start of each test.
 *
 * @module
 */

import { AdmissionReview, Operation } from './admission.js';
import { Index } from './cache.js';
import { bindPlugin } from './component.js';
import { Context, Event, Update } from './event.js';
import { followRedirects } from './fetch.js';
import { ADDED, DELETED, UPDATED, write } from './frame.js';
import { installHost } from './host.js';
import { GroupVersionKind } from './kind.js';
import { KubeError } from './kube.js';
import { Manifest } from './manifest.js';
import * as objects from './objects.js';

/**
 * One line a plugin logged.
 *
 * @typedef {object} LogLine
 * @property {import('./log.js').Level} level Its severity.
 * @property {string} message Its text.
 */

/**
 * One call a plugin made through `kube`, as the host received it.
 *
 * @typedef {object} KubeCall
 * @property {'get' | 'create' | 'update' | 'patch' | 'apply' | 'delete'} verb The verb grants are checked against (`update` is a replace).
 * @property {GroupVersionKind} kind
 * @property {string | undefined} namespace
 * @property {string} name For a create: the body's `metadata.name`, or `''`.
 * @property {string} key `namespace/name`, or `name`.
 * @property {'status' | undefined} subresource
 * @property {string | undefined} body The JSON text sent: the object, or the patch.
 * @property {any} object The body, parsed.
 * @property {'merge' | 'json' | 'strategic' | undefined} patchType
 * @property {boolean} force An apply's `force`.
 * @property {string | undefined} uid A delete's precondition.
 * @property {string | undefined} resourceVersion A delete's precondition.
 * @property {'orphan' | 'background' | 'foreground' | undefined} propagation
 * @property {string} cluster The cluster it went to: the call's, or the one targeted.
 */

let state = freshState();

function freshState() {
  return {
    /** @type {string | undefined} */ config: undefined,
    /** @type {LogLine[]} */ logs: [],
    /** @type {Set<string>} */ subscribed: new Set(),
    /** @type {Map<string, Map<string, string>>} */ cache: new Map(),
    /** @type {KubeCall[]} */ kubeCalls: [],
    /** @type {any[]} */ kubeScripts: [],
    /** @type {any[]} */ events: [],
    /** @type {any[]} */ eventFailures: [],
    /** @type {any} */ manifest: undefined,
    /** @type {Manifest | undefined} the manifest given to declare() */ declared: undefined,
    /** @type {MetricUpdate[]} */ metricUpdates: [],
    /** @type {Map<string, number>} counter and gauge values by series key */ metricValues: new Map(),
    /** @type {Map<string, number[]>} histogram observations by series key */ observations: new Map(),
    /** @type {number[]} requeue delays in milliseconds */ requeues: [],
    remainingMs: 1000,
    /** @type {string[]} the clusters the plugin runs on; empty: `default` alone */ clusters: [],
    /** @type {string | undefined} the call's cluster; undefined: the first of `clusters` */ cluster: undefined,
    /** @type {string | undefined} the cluster targeted, if any */ target: undefined,
    /** @type {RecordedRequest[]} */ httpRequests: [],
    /** @type {{pattern: string, answer: Response | Error, times: number | undefined}[]} */ httpScripts: [],
    /** @type {string[]} */ httpGranted: [],
    httpDenyUnscripted: false,
  };
}

/**
 * One metric update as it was handed to the host.
 *
 * @typedef {object} MetricUpdate
 * @property {'add' | 'set' | 'observe'} op
 * @property {string} name
 * @property {string[]} labelValues
 * @property {number} value
 */

/** How many series a plugin may hold, as the host's default. */
const SERIES_LIMIT = 1000;

/** The key of the series `name{labelValues}` in the fake host's maps. */
const seriesKey = (name, labelValues) => JSON.stringify([name, ...labelValues]);

/**
 * Declares the manifest's subscriptions, metrics and indexes to the fake
 * host (a `Manifest`, or a plugin whose `manifest()` is called): from now on
 * the kinds it subscribes to are visible to cache look-ups (empty until
 * `cacheInsert`), `cache.byIndex` looks up its indexes (an index not declared is unknown, as
 * on the host), and every metric update is checked as the host does: one the
 * host would drop (a metric not defined, the wrong kind of update, the wrong
 * number of label values, a negative counter increment, NaN, a series over
 * the limit of 1,000) is recorded but not counted, and logged as a warning.
 * Throws when the host would not load the plugin for its metric or index
 * definitions.
 *
 * @param {Manifest | unknown} manifestOrPlugin
 */
export function declare(manifestOrPlugin) {
  const manifest = manifestOrPlugin instanceof Manifest ? manifestOrPlugin : manifestInstance(manifestOrPlugin);
  const problems = manifest.problems();
  if (problems.length > 0) {
    throw new Error(`the host would not load this plugin: ${problems.join('; ')}`);
  }
  state.declared = manifest;
  for (const subscription of manifest.subscriptions) {
    state.subscribed.add(GroupVersionKind.from(subscription.toRecord().kind).toString());
  }
  for (const index of manifest.indexes) {
    state.subscribed.add(index.kind.toString());
  }
}

function manifestInstance(plugin) {
  const instance = typeof plugin === 'function' ? new /** @type {any} */ (plugin)() : plugin;
  const manifest = /** @type {any} */ (instance)?.manifest?.();
  if (!(manifest instanceof Manifest)) {
    throw new TypeError('declare takes a Manifest, or a plugin whose manifest() returns one');
  }
  return manifest;
}

/**
 * Every metric update since the last {@link takeMetricUpdates}, kept (those
 * dropped as invalid included).
 *
 * @returns {MetricUpdate[]}
 */
export function metricUpdates() {
  return [...state.metricUpdates];
}

/**
 * Every metric update since the last take, removed; the values are kept.
 *
 * @returns {MetricUpdate[]}
 */
export function takeMetricUpdates() {
  const updates = state.metricUpdates;
  state.metricUpdates = [];
  return updates;
}

/**
 * The value of the counter or gauge series `name{labelValues}`, or
 * `undefined` if it was never updated: `metric('alerts_total', 'shop')`.
 *
 * @param {string} name
 * @param {...string} labelValues
 * @returns {number | undefined}
 */
export function metric(name, ...labelValues) {
  return state.metricValues.get(seriesKey(name, labelValues));
}

/**
 * Every counter and gauge series with its value: `[name, labelValues, value]`.
 *
 * @returns {[string, string[], number][]}
 */
export function metrics() {
  return [...state.metricValues].map(([key, value]) => {
    const [name, ...labelValues] = JSON.parse(key);
    return [name, labelValues, value];
  });
}

/**
 * The observations of the histogram series `name{labelValues}`, in order.
 *
 * @param {string} name
 * @param {...string} labelValues
 * @returns {number[]}
 */
export function observations(name, ...labelValues) {
  return [...(state.observations.get(seriesKey(name, labelValues)) ?? [])];
}

/**
 * Every `workqueue.requeueAfter` request since the last {@link takeRequeues},
 * in milliseconds, kept. The host honours the last one of a call.
 *
 * @returns {number[]}
 */
export function requeues() {
  return [...state.requeues];
}

/**
 * Every requeue request since the last take, in milliseconds, removed.
 *
 * @returns {number[]}
 */
export function takeRequeues() {
  const taken = state.requeues;
  state.requeues = [];
  return taken;
}

/**
 * What `deadline.remainingMs()` answers (1000 after {@link reset}).
 *
 * @param {number} milliseconds
 */
export function setRemainingMs(milliseconds) {
  state.remainingMs = milliseconds;
}

/**
 * The clusters the plugin runs on, as `cluster.names()` answers
 * (`['default']` after {@link reset}); the first is the call's cluster until
 * {@link setCluster} says otherwise.
 *
 * @param {string[]} names
 */
export function setClusters(names) {
  state.clusters = names.map(String);
}

/**
 * Makes `name` the cluster of the calls that follow, as the host does for
 * each notification (and ends any target the plugin set): what
 * `cluster.current()` answers, and where recorded kube calls say they went.
 *
 * @param {string} name
 */
export function setCluster(name) {
  state.cluster = String(name);
  state.target = undefined;
}

/** The stand-in host's default cluster. */
const DEFAULT_CLUSTER = 'default';

function clusterNames() {
  return state.clusters.length === 0 ? [DEFAULT_CLUSTER] : [...state.clusters].sort();
}

function clusterCurrent() {
  return state.target ?? state.cluster ?? state.clusters[0] ?? DEFAULT_CLUSTER;
}

/** Why the host would drop `update`, if it would. */
function metricProblem(update) {
  const { op, name, labelValues, value } = update;
  if (Number.isNaN(value)) {
    return `metric ${name}: NaN`;
  }
  if (state.declared === undefined) {
    return undefined;
  }
  const metric = state.declared.metrics.find((candidate) => candidate.name === name);
  if (metric === undefined) {
    return `metric ${name} is not defined in the manifest`;
  }
  const allowed = { counter: ['add'], gauge: ['add', 'set'], histogram: ['observe'] }[metric.kind];
  if (!allowed.includes(op)) {
    return `metric ${name}: ${op} on a ${metric.kind}`;
  }
  if (labelValues.length !== metric.labelNames.length) {
    return `metric ${name}: ${labelValues.length} label values for ${metric.labelNames.length} labels`;
  }
  if (metric.kind === 'counter' && value < 0) {
    return `metric ${name}: a counter cannot go down (${value})`;
  }
  const key = seriesKey(name, labelValues);
  const known = state.metricValues.has(key) || state.observations.has(key);
  if (!known && state.metricValues.size + state.observations.size >= SERIES_LIMIT) {
    return `metric ${name}: over the limit of ${SERIES_LIMIT} series`;
  }
  return undefined;
}

function metricUpdate(op, name, labelValues, value) {
  const update = { op, name, labelValues: [...labelValues], value };
  state.metricUpdates.push(update);
  const problem = metricProblem(update);
  if (problem !== undefined) {
    state.logs.push({ level: 'warn', message: `metric update dropped: ${problem}` });
    return;
  }
  const key = seriesKey(name, labelValues);
  if (op === 'observe') {
    state.observations.set(key, [...(state.observations.get(key) ?? []), value]);
  } else {
    state.metricValues.set(key, (op === 'set' ? 0 : (state.metricValues.get(key) ?? 0)) + value);
  }
}

/** Forgets the configuration, logs, subscriptions, cache, kube calls, events, scripts and {@link enforce}. */
export function reset() {
  state = freshState();
}

/**
 * Sets the configuration `config.get()` returns, given as a value (it is
 * passed to the plugin as JSON, as the host does).
 *
 * @param {unknown} value
 */
export function setConfig(value) {
  setConfigJson(JSON.stringify(value));
}

/**
 * Sets the configuration as JSON text (`config.raw()` returns it as is).
 *
 * @param {string} json
 */
export function setConfigJson(json) {
  if (typeof json !== 'string') {
    throw new TypeError('setConfigJson takes JSON text');
  }
  state.config = json;
}

/** Removes the configuration: `config.get()` returns `undefined`. */
export function clearConfig() {
  state.config = undefined;
}

/**
 * Every line logged since the last take, removed.
 *
 * @returns {LogLine[]}
 */
export function takeLogs() {
  const logs = state.logs;
  state.logs = [];
  return logs;
}

/**
 * The text of every line logged since the last take, removed.
 *
 * @returns {string[]}
 */
export function takeMessages() {
  return takeLogs().map((line) => line.message);
}

/**
 * Every `kube` call since the last take, in order, removed; refused and
 * failed calls included.
 *
 * @returns {KubeCall[]}
 */
export function takeKubeCalls() {
  const calls = state.kubeCalls;
  state.kubeCalls = [];
  return calls;
}

/**
 * Scripts the answer to the kube calls matching `verb` (`get`, `create`,
 * `update`, `patch`, `apply`, `delete`), `kind`, `namespace`, `name` and
 * `subresource` (each left out matches anything): return `returns` (an
 * object, or JSON text) or throw `throws` (a `KubeError`), `times` times
 * (left out: every time). Scripts are tried in the order given; the first
 * that matches answers; one with neither `returns` nor `throws` gives the
 * unscripted answer.
 *
 * ```js
 * testing.scriptKube({ verb: 'get', kind: DEPLOYMENT, name: 'web', returns: web });
 * testing.scriptKube({ verb: 'update', throws: new KubeError('conflict', 'the object has been modified'), times: 1 });
 * ```
 *
 * @param {{verb?: string, kind?: GroupVersionKind | {group: string, version: string, kind: string}, namespace?: string, name?: string, subresource?: string, returns?: unknown, throws?: KubeError, times?: number}} script
 */
export function scriptKube(script) {
  const { verb, kind, namespace, name, subresource, returns, throws, times } = script ?? {};
  if (returns !== undefined && throws !== undefined) {
    throw new TypeError('scriptKube takes returns or throws, not both');
  }
  if (throws !== undefined && !(throws instanceof KubeError)) {
    throw new TypeError("throws must be a KubeError, e.g. new KubeError('conflict', 'stale')");
  }
  if (times !== undefined && !(Number.isInteger(times) && times >= 1)) {
    throw new TypeError('times must be a whole number of at least 1 (or left out for every time)');
  }
  state.kubeScripts.push({
    verb,
    kind: kind === undefined ? undefined : GroupVersionKind.from(kind),
    namespace,
    name,
    subresource,
    returns: returns === undefined || typeof returns === 'string' ? returns : JSON.stringify(returns),
    throws,
    times,
  });
}

/**
 * Every event published since the last take (the contract's `event`
 * records: `regarding`, `related`, `eventType`, `reason`, `action`,
 * `note`), in order, removed; refused ones included.
 *
 * @returns {import('../types/index.js').EventRecord[]}
 */
export function takeEvents() {
  const published = state.events;
  state.events = [];
  return published;
}

/**
 * Makes the next `times` publishes (left out: all) throw `throws`.
 *
 * @param {{throws: KubeError, times?: number}} script
 */
export function scriptEvents({ throws, times } = /** @type {any} */ ({})) {
  if (!(throws instanceof KubeError)) {
    throw new TypeError('throws must be a KubeError');
  }
  state.eventFailures.push({ throws, times });
}

/**
 * Refuses, as the host does, kube calls outside the manifest's write rules
 * and events without its `events` capability, with a `not-granted`
 * `KubeError` (the call is still recorded). Takes a `Manifest`, a plugin (a
 * class or object whose `manifest()` is called), or `undefined` to stop.
 *
 * @param {unknown} manifestOrPlugin
 */
export function enforce(manifestOrPlugin) {
  if (manifestOrPlugin === undefined) {
    state.manifest = undefined;
  } else if (manifestOrPlugin instanceof Manifest) {
    state.manifest = manifestOrPlugin.toRecord();
  } else {
    state.manifest = manifestOf(manifestOrPlugin);
  }
}

/**
 * Makes `kind` visible to cache look-ups, as subscribing to it would. Kinds
 * never subscribed to fail with a `CacheError` (`not-subscribed`).
 *
 * @param {GroupVersionKind | {group: string, version: string, kind: string}} kind
 */
export function subscribe(kind) {
  state.subscribed.add(GroupVersionKind.from(kind).toString());
}

function objectKey(namespace, name) {
  return `${namespace ?? ''}/${name}`;
}

/**
 * Puts `object` (a Kubernetes object with `apiVersion`, `kind` and
 * `metadata.name`) in the cache, replacing one with the same namespace and
 * name, and subscribes to its kind.
 *
 * @param {object} object
 * @param {GroupVersionKind | {group: string, version: string, kind: string}} [kind] Defaults to the object's own.
 */
export function cacheInsert(object, kind = GroupVersionKind.ofObject(object)) {
  cacheInsertJson(kind, JSON.stringify(object));
}

/**
 * Puts an object given as JSON text in the cache under `kind`, keyed by its
 * `metadata.namespace` and `metadata.name`, and subscribes to `kind`.
 *
 * @param {GroupVersionKind | {group: string, version: string, kind: string}} kind
 * @param {string} json
 */
export function cacheInsertJson(kind, json) {
  const gvk = GroupVersionKind.from(kind).toString();
  const object = JSON.parse(json);
  state.subscribed.add(gvk);
  if (!state.cache.has(gvk)) {
    state.cache.set(gvk, new Map());
  }
  state.cache.get(gvk).set(objectKey(objects.namespace(object), objects.name(object)), json);
}

/**
 * Removes `namespace/name` of `kind` from the cache.
 *
 * @param {GroupVersionKind | {group: string, version: string, kind: string}} kind
 * @param {string | undefined} namespace
 * @param {string} name
 */
export function cacheRemove(kind, namespace, name) {
  state.cache.get(GroupVersionKind.from(kind).toString())?.delete(objectKey(namespace, name));
}

/**
 * The plural resource name guessed for `kind` as the host's replayer (and
 * kubectl without discovery) guesses it: lowercase, `-s`/`-x`/`-ch`/`-sh`
 * → `-es`, consonant + `y` → `-ies`, else `-s`.
 *
 * @param {string} kind
 * @returns {string}
 */
export function resourceOf(kind) {
  const lower = kind.toLowerCase();
  if (/(s|x|ch|sh)$/.test(lower)) {
    return `${lower}es`;
  }
  if (/[^aeiou]y$/.test(lower)) {
    return `${lower.slice(0, -1)}ies`;
  }
  return `${lower}s`;
}

/**
 * The context the host would send with `object`: its kind (from
 * `apiVersion` and `kind`), resource, key and resource version; no flags
 * set unless `flags` says so.
 *
 * @param {object} object
 * @param {{kind?: GroupVersionKind, resource?: string, isInitialList?: boolean, isResync?: boolean, finalStateUnknown?: boolean}} [overrides]
 * @returns {Context}
 */
export function contextFor(object, overrides = {}) {
  const kind = overrides.kind ?? GroupVersionKind.ofObject(object);
  return new Context({
    kind,
    resource: overrides.resource ?? resourceOf(kind.kind),
    key: objects.key(object),
    resourceVersion: object?.metadata?.resourceVersion ?? '',
    isInitialList: overrides.isInitialList ?? false,
    isResync: overrides.isResync ?? false,
    finalStateUnknown: overrides.finalStateUnknown ?? false,
  });
}

/**
 * The event `onAdd` would receive for `object`.
 *
 * @param {object} object
 * @returns {Event}
 */
export function added(object) {
  return new Event(contextFor(object), JSON.stringify(object));
}

/**
 * The event `onUpdate` would receive for a change from `old` to `new`.
 *
 * @param {object} old
 * @param {object} updated
 * @returns {Update}
 */
export function updated(old, updated) {
  return new Update(contextFor(updated), JSON.stringify(old), JSON.stringify(updated));
}

/**
 * The event `onDelete` would receive for `object`.
 *
 * @param {object} object
 * @returns {Event}
 */
export function deleted(object) {
  return new Event(contextFor(object), JSON.stringify(object));
}

/**
 * The add replaying `object` to a plugin that joined after the informer
 * synced (`isInitialList` set).
 *
 * @param {object} object
 * @returns {Event}
 */
export function listed(object) {
  return new Event(contextFor(object, { isInitialList: true }), JSON.stringify(object));
}

/**
 * The periodic resync update for `object` (`isResync` set, old and new
 * equal).
 *
 * @param {object} object
 * @returns {Update}
 */
export function resynced(object) {
  const json = JSON.stringify(object);
  return new Update(contextFor(object, { isResync: true }), json, json);
}

/**
 * The delete inferred from a relist, `object` being the last known state
 * (`finalStateUnknown` set).
 *
 * @param {object} object
 * @returns {Event}
 */
export function vanished(object) {
  return new Event(contextFor(object, { finalStateUnknown: true }), JSON.stringify(object));
}

/** The review record the API server would send about `object` and `oldObject` (one may be undefined). */
function review(operation, object, oldObject) {
  const present = object ?? oldObject;
  const kind = GroupVersionKind.ofObject(present);
  return new AdmissionReview({
    uid: '00000000-0000-0000-0000-000000000001',
    kind,
    resource: resourceOf(kind.kind),
    subresource: '',
    name: objects.name(present),
    namespace: objects.namespace(present) ?? '',
    operation,
    userInfo: { username: 'admin', uid: '', groups: [], extra: [] },
    object: object === undefined ? undefined : JSON.stringify(object),
    oldObject: oldObject === undefined ? undefined : JSON.stringify(oldObject),
    dryRun: false,
    options: undefined,
  });
}

/**
 * The review the API server sends when `object` is created, by user
 * `admin` (for `validate` and `mutate`).
 *
 * @param {object} object
 * @returns {AdmissionReview}
 */
export function creating(object) {
  return review(Operation.Create, object, undefined);
}

/**
 * The review of an update from `old` to `updated`.
 *
 * @param {object} old
 * @param {object} updated
 * @returns {AdmissionReview}
 */
export function updating(old, updated) {
  return review(Operation.Update, updated, old);
}

/**
 * The review of the deletion of `object` (its `object` absent, its
 * `oldObject` the object).
 *
 * @param {object} object
 * @returns {AdmissionReview}
 */
export function deleting(object) {
  return review(Operation.Delete, undefined, object);
}

/**
 * Delivers one notification through the component's `delivery` glue, as
 * the host would: written into a frame (with the old state only if the
 * plugin's `oldState` asks for it), read back and handed to the handler.
 * The answer is the host's view of the call: `{tag: 'ok', val: undefined}`,
 * or `{tag: 'err', val: message}`.
 *
 * @param {ReturnType<typeof bindPlugin>} bound The plugin's exports.
 * @param {'add' | 'update' | 'delete'} type
 * @param {Context} context
 * @param {string} json The object (an update's new state).
 * @param {string} [oldJson] An update's old state.
 */
async function deliverOne(bound, type, context, json, oldJson) {
  const { oldState } = bound.delivery.options();
  const what = type === 'update' ? UPDATED : type === 'delete' ? DELETED : ADDED;
  const frame = write([{ what, context, json, oldJson: type === 'update' && oldState ? oldJson : undefined }]);
  const result = await bound.delivery.deliver(frame);
  return result.tag === 'ok' ? { tag: 'ok', val: undefined } : { tag: 'err', val: result.val.message };
}

/**
 * What the component would answer the host for `notification`, going
 * through the same glue as the built component (the notification written
 * into a delivery frame, as the host writes it, then read back: an update
 * carries its old state only if the plugin's `oldState` asks for it):
 * `{tag: 'ok'}` or `{tag: 'err', val: message}` (a thrown error's
 * message, as the host records it). Handlers that return promises are
 * awaited.
 *
 * @param {unknown} plugin The plugin module's default export (a class or object).
 * @param {Event | Update} notification From {@link added}, {@link updated}, ...
 * @param {'add' | 'update' | 'delete'} [type] Needed only to deliver an `Event` as a delete.
 * @returns {Promise<{tag: 'ok', val?: undefined} | {tag: 'err', val: string}>}
 */
export async function dispatch(plugin, notification, type) {
  const bound = bindPlugin(plugin);
  if (notification instanceof Update) {
    return deliverOne(bound, 'update', notification.context, notification.newJson, notification.oldJson);
  }
  if (!(notification instanceof Event)) {
    throw new TypeError('dispatch takes an Event or an Update');
  }
  return deliverOne(bound, type === 'delete' ? 'delete' : 'add', notification.context, notification.json);
}

/**
 * The manifest record the component would return for `plugin` (what
 * `herald plugin check` prints).
 *
 * @param {unknown} plugin The plugin module's default export.
 * @returns {object}
 */
export function manifestOf(plugin) {
  return bindPlugin(plugin).manifest();
}

/** One requirement of a label selector, as a predicate over labels. */
function parseSelector(selector) {
  const parts = [];
  let depth = 0;
  let start = 0;
  for (let index = 0; index < selector.length; index++) {
    const character = selector[index];
    if (character === '(') {
      depth++;
    } else if (character === ')') {
      if (depth === 0) {
        throw new Error(`unbalanced ')' in ${JSON.stringify(selector)}`);
      }
      depth--;
    } else if (character === ',' && depth === 0) {
      parts.push(selector.slice(start, index));
      start = index + 1;
    }
  }
  parts.push(selector.slice(start));
  const check = (word) => {
    if (word === '' || !/^[A-Za-z0-9\-_./]+$/.test(word)) {
      throw new Error(`invalid label key or value ${JSON.stringify(word)}`);
    }
    return word;
  };
  const set = (values) => {
    const trimmed = values.trim();
    if (!trimmed.startsWith('(') || !trimmed.endsWith(')')) {
      throw new Error(`expected a parenthesised set, got ${JSON.stringify(values)}`);
    }
    return trimmed.slice(1, -1).split(',').map((value) => check(value.trim()));
  };
  const has = (labels, key) => Object.hasOwn(labels, key);
  return parts
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .map((part) => {
      let at;
      if ((at = part.indexOf('!=')) !== -1) {
        const [key, value] = [check(part.slice(0, at).trim()), check(part.slice(at + 2).trim())];
        return (labels) => labels[key] !== value;
      }
      if ((at = part.indexOf('==')) !== -1 || (at = part.indexOf('=')) !== -1) {
        const width = part.startsWith('==', at) ? 2 : 1;
        const [key, value] = [check(part.slice(0, at).trim()), check(part.slice(at + width).trim())];
        return (labels) => has(labels, key) && labels[key] === value;
      }
      if ((at = part.indexOf(' notin ')) !== -1) {
        const [key, values] = [check(part.slice(0, at).trim()), set(part.slice(at + 7))];
        return (labels) => !has(labels, key) || !values.includes(labels[key]);
      }
      if ((at = part.indexOf(' in ')) !== -1) {
        const [key, values] = [check(part.slice(0, at).trim()), set(part.slice(at + 4))];
        return (labels) => has(labels, key) && values.includes(labels[key]);
      }
      if (part.startsWith('!')) {
        const key = check(part.slice(1).trim());
        return (labels) => !has(labels, key);
      }
      const key = check(part);
      return (labels) => has(labels, key);
    });
}

/**
 * Whether `labels` match the Kubernetes label selector `selector` (`a=b`,
 * `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`, joined by commas),
 * as the fake cache's `list` applies it. Throws if the selector does not
 * parse.
 *
 * @param {string} selector
 * @param {Record<string, string>} labels
 * @returns {boolean}
 */
export function selectorMatches(selector, labels) {
  return parseSelector(selector).every((requirement) => requirement(labels));
}

function visible(kind) {
  if (!state.subscribed.has(GroupVersionKind.from(kind).toString())) {
    throw { payload: { tag: 'not-subscribed', val: kind } };
  }
}

function notGranted(call) {
  const manifest = state.manifest;
  if (manifest === undefined) {
    return undefined;
  }
  const allowed = manifest.writes.some(
    (rule) =>
      rule.group === call.kind.group &&
      rule.kind === call.kind.kind &&
      rule.verbs.includes(call.verb) &&
      rule.subresource === call.subresource &&
      (rule.namespaces.includes('*') || rule.namespaces.includes(call.namespace ?? '*')),
  );
  if (allowed) {
    return undefined;
  }
  const where = call.namespace === undefined ? 'cluster scope' : `namespace ${call.namespace}`;
  const subresource = call.subresource === undefined ? '' : ` subresource ${call.subresource}`;
  return `no write rule allows ${call.verb} on ${call.kind.group || 'core'}/${call.kind.kind}${subresource} in ${where}`;
}

/** Uses up one use of `script` in `list`. */
function spend(list, script) {
  if (script.times !== undefined) {
    script.times -= 1;
    if (script.times === 0) {
      list.splice(list.indexOf(script), 1);
    }
  }
}

/** Records `call` and answers it: not-granted, a script, or `fallback()`. */
function answer(fields, fallback) {
  const kind = GroupVersionKind.from(fields.kind);
  const call = {
    verb: fields.verb,
    kind,
    namespace: fields.namespace ?? undefined,
    name: fields.name,
    key: fields.namespace ? `${fields.namespace}/${fields.name}` : fields.name,
    subresource: fields.subresource ?? undefined,
    body: fields.body,
    object: fields.body === undefined ? undefined : JSON.parse(fields.body),
    patchType: fields.patchType,
    force: fields.force ?? false,
    uid: fields.uid,
    resourceVersion: fields.resourceVersion,
    propagation: fields.propagation,
    cluster: clusterCurrent(),
  };
  state.kubeCalls.push(call);
  const refusal = notGranted(call);
  if (refusal !== undefined) {
    throw { payload: { tag: 'not-granted', val: refusal } };
  }
  const script = state.kubeScripts.find(
    (candidate) =>
      (candidate.verb === undefined || candidate.verb === call.verb) &&
      (candidate.kind === undefined || candidate.kind.equals(kind)) &&
      (candidate.namespace === undefined || candidate.namespace === call.namespace) &&
      (candidate.name === undefined || candidate.name === call.name) &&
      (candidate.subresource === undefined || candidate.subresource === call.subresource),
  );
  if (script !== undefined) {
    spend(state.kubeScripts, script);
    if (script.throws !== undefined) {
      throw { payload: script.throws.toRecord() };
    }
    if (script.returns !== undefined) {
      return script.returns;
    }
  }
  return fallback(call);
}

function identity(call) {
  const metadata = call.namespace === undefined ? { name: call.name } : { name: call.name, namespace: call.namespace };
  return JSON.stringify({ apiVersion: call.kind.apiVersion(), kind: call.kind.kind, metadata });
}

function notFound(call) {
  const group = call.kind.group === '' ? '' : `.${call.kind.group}`;
  throw { payload: { tag: 'not-found', val: `${resourceOf(call.kind.kind)}${group} "${call.name}" not found` } };
}

installHost({
  indexLookup(name, value, namespace) {
    const index = state.declared?.indexes.find((candidate) => candidate.name === name);
    if (!(index instanceof Index)) {
      throw { payload: { tag: 'unknown-index', val: `${name} (the fake host knows the indexes of the manifest given to testing.declare)` } };
    }
    const objectsOfKind = state.cache.get(index.kind.toString()) ?? new Map();
    return [...objectsOfKind]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, json]) => json)
      .filter((json) => {
        const object = JSON.parse(json);
        return (namespace === undefined || objects.namespace(object) === namespace) && index.values(object).includes(value);
      });
  },
  metricsAdd(name, labelValues, value) {
    metricUpdate('add', name, labelValues, value);
  },
  metricsSet(name, labelValues, value) {
    metricUpdate('set', name, labelValues, value);
  },
  metricsObserve(name, labelValues, value) {
    metricUpdate('observe', name, labelValues, value);
  },
  requeueAfter(delayMs) {
    state.requeues.push(Number(delayMs));
  },
  remainingMs() {
    return BigInt(state.remainingMs);
  },
  clusterCurrent,
  clusterNames,
  clusterTarget(name) {
    if (name === undefined) {
      state.target = undefined;
      return;
    }
    if (!clusterNames().includes(name)) {
      throw {
        payload:
          `this plugin is not delivered notifications from a cluster named ${JSON.stringify(name)}: ` +
          `it may target only its own clusters (${clusterNames().join(', ')})`,
      };
    }
    state.target = name;
  },
  kubeGet(target) {
    return answer({ verb: 'get', ...target }, notFound);
  },
  kubeCreate(kind, namespace, body) {
    const name = JSON.parse(body)?.metadata?.name ?? '';
    return answer({ verb: 'create', kind, namespace, name, body }, () => body);
  },
  kubeReplace(target, body) {
    return answer({ verb: 'update', ...target, body }, () => body);
  },
  kubePatch(target, patchType, body) {
    return answer({ verb: 'patch', ...target, body, patchType }, (call) => (patchType === 'json' ? identity(call) : body));
  },
  kubeApply(target, body, force) {
    return answer({ verb: 'apply', ...target, body, force }, () => body);
  },
  kubeDelete(target, options) {
    answer({ verb: 'delete', ...target, ...options }, () => undefined);
  },
  eventsPublish(event) {
    state.events.push(event);
    if (state.manifest !== undefined && !state.manifest.capabilities.includes('events')) {
      throw { payload: { tag: 'not-granted', val: 'the events capability is not declared in the manifest' } };
    }
    const failure = state.eventFailures[0];
    if (failure !== undefined) {
      spend(state.eventFailures, failure);
      throw { payload: failure.throws.toRecord() };
    }
  },
  log(level, message) {
    state.logs.push({ level, message });
  },
  configGet() {
    return state.config;
  },
  cacheGet(kind, namespace, name) {
    visible(kind);
    return state.cache.get(GroupVersionKind.from(kind).toString())?.get(objectKey(namespace, name));
  },
  cacheList(kind, namespace, labelSelector) {
    let requirements;
    try {
      requirements = parseSelector(labelSelector ?? '');
    } catch (error) {
      throw { payload: { tag: 'invalid-selector', val: error.message } };
    }
    visible(kind);
    const found = [];
    const entries = [...(state.cache.get(GroupVersionKind.from(kind).toString()) ?? new Map())].sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    for (const [, json] of entries) {
      const object = JSON.parse(json);
      if (namespace !== undefined && objects.namespace(object) !== namespace) {
        continue;
      }
      const labels = objects.labels(object);
      if (requirements.every((requirement) => requirement(labels))) {
        found.push(json);
      }
    }
    return found;
  },
});

/**
 * One HTTP request (one hop of it) as the host received it.
 *
 * @typedef {object} RecordedRequest
 * @property {string} method
 * @property {string} url
 * @property {Record<string, string>} headers Names in lowercase.
 * @property {string | undefined} body The body as text.
 * @property {() => any} json The body parsed.
 */

const NETWORK_ERROR = 'NetworkError when attempting to fetch resource';
const FAILURES = Object.freeze(['denied', 'timeout', 'connection', 'protocol']);

/** One hop, answered from the scripts (see {@link http}). */
async function fakeSend(url, init) {
  const body = init.body === undefined ? undefined : new TextDecoder().decode(init.body);
  state.httpRequests.push({
    method: init.method,
    url,
    headers: Object.fromEntries(new Headers(init.headers)),
    body,
    json: () => JSON.parse(body ?? ''),
  });
  const failure = (kind) => new TypeError(NETWORK_ERROR, { cause: new Error(`${kind} (scripted)`) });
  if (state.httpGranted.length > 0 && !state.httpGranted.includes(new URL(url).origin)) {
    throw failure('denied');
  }
  const matches = (script) => (script.pattern.includes('*') ? glob(script.pattern).test(url) : url.startsWith(script.pattern));
  const once = state.httpScripts.find((script) => script.times !== undefined && matches(script));
  let answer;
  if (once !== undefined) {
    spend(state.httpScripts, once);
    answer = once.answer;
  } else {
    answer = state.httpScripts.findLast((script) => script.times === undefined && matches(script))?.answer;
  }
  if (answer === undefined) {
    answer = state.httpDenyUnscripted ? 'denied' : new Response(null, { status: 404 });
  }
  if (typeof answer === 'string') {
    throw failure(answer);
  }
  return answer.clone();
}

/** A URL glob as a regular expression: `*` matches any run of characters. */
function glob(pattern) {
  const escape = (part) => part.replace(/[.+?^$()|[\]{}\\]/g, '\\$&');
  return new RegExp(`^${pattern.split('*').map(escape).join('.*')}$`);
}

globalThis.fetch = followRedirects(fakeSend);

function script(pattern, answer, times) {
  if (typeof pattern !== 'string') {
    throw new TypeError('a URL pattern is a string: a prefix, or a glob with *');
  }
  state.httpScripts.push({ pattern, answer, times });
}

function response(value) {
  if (!(value instanceof Response)) {
    throw new TypeError("respond takes a Response, e.g. new Response('ok', { status: 202 })");
  }
  return value;
}

function failure(kind) {
  if (!FAILURES.includes(kind)) {
    throw new TypeError(`a scripted failure is one of ${FAILURES.join(', ')}, got ${String(kind)}`);
  }
  return kind;
}

/**
 * The fake host's side of outbound HTTP. Importing `@herald/sdk/testing`
 * replaces `globalThis.fetch` with the plugin's `fetch` over these scripts:
 * every request (each hop of a redirect) is recorded, and answered by the
 * last added `respond` that matches, one-shot ones first; unscripted, by a
 * 404 (or a denial, after `denyUnscripted()`). A failure rejects the fetch
 * with the `TypeError` the component's `fetch` gives (its `cause` says what
 * was scripted; the component's says nothing).
 *
 * ```js
 * testing.http.respond('https://hooks.example.com/', new Response('ok', { status: 202 }));
 * testing.http.failOnce('https://hooks.example.com/', 'timeout');
 * testing.http.grant('https://hooks.example.com');   // other origins are then denied
 * const [post] = testing.http.takeRequests();
 * assert.deepEqual(post.json(), { text: '...' });
 * ```
 */
export const http = Object.freeze({
  /**
   * Answers every later request whose URL matches `pattern` (a prefix, or a
   * glob where `*` matches any run of characters) with a copy of `answer`.
   *
   * @param {string} pattern
   * @param {Response} answer
   */
  respond(pattern, answer) {
    script(pattern, response(answer), undefined);
  },
  /**
   * Answers the next request whose URL matches `pattern` with `answer`, once.
   *
   * @param {string} pattern
   * @param {Response} answer
   */
  respondOnce(pattern, answer) {
    script(pattern, response(answer), 1);
  },
  /**
   * Fails every later request whose URL matches `pattern`, as the host
   * would: `'denied'`, `'timeout'`, `'connection'` or `'protocol'`.
   *
   * @param {string} pattern
   * @param {'denied' | 'timeout' | 'connection' | 'protocol'} kind
   */
  fail(pattern, kind) {
    script(pattern, failure(kind), undefined);
  },
  /**
   * Fails the next request whose URL matches `pattern`, once.
   *
   * @param {string} pattern
   * @param {'denied' | 'timeout' | 'connection' | 'protocol'} kind
   */
  failOnce(pattern, kind) {
    script(pattern, failure(kind), 1);
  },
  /**
   * Grants the plugin an origin (`scheme://host[:port]`), as the operator's
   * `grants.http` does: once any origin is granted, a request to one that is
   * not is denied whatever the scripts say; a redirect too.
   *
   * @param {string} origin
   */
  grant(origin) {
    state.httpGranted.push(new URL(origin).origin);
  },
  /** Makes an unscripted request fail as denied instead of answering 404. */
  denyUnscripted() {
    state.httpDenyUnscripted = true;
  },
  /**
   * Every request (hop) since the last take, in order, kept.
   *
   * @returns {RecordedRequest[]}
   */
  requests() {
    return [...state.httpRequests];
  },
  /**
   * Every request since the last take, removed.
   *
   * @returns {RecordedRequest[]}
   */
  takeRequests() {
    const taken = state.httpRequests;
    state.httpRequests = [];
    return taken;
  },
});

/**
 * One event of a replay and what came of it.
 *
 * @typedef {object} ReplayedEvent
 * @property {number} line The 1-based line of the event in the text.
 * @property {'add' | 'update' | 'delete'} type
 * @property {string} key The object's key.
 * @property {{tag: 'ok', val?: undefined} | {tag: 'err', val: string}} result
 * @property {LogLine[]} logs What the plugin logged while handling it.
 */

const WATCH_TYPES = { ADDED: 'add', MODIFIED: 'update', DELETED: 'delete', add: 'add', update: 'update', delete: 'delete' };

/**
 * Feeds recorded events to `plugin` through the fake host, as
 * `herald plugin replay` feeds them to a component: one JSON object per
 * line, `{"type": "add"|"update"|"delete" (or ADDED|MODIFIED|DELETED),
 * "object": {...}, "old": {...}}` with optional `initial`, `resync` and
 * `finalStateUnknown` flags (the format of `examples/events/`). Each object
 * is put in (or, on delete, removed from) the fake cache before its handler
 * runs; an update without `old` gets the state last seen for its key. The
 * plugin is one instance for the whole replay; the fake host is not reset.
 *
 * @param {unknown} plugin The plugin module's default export.
 * @param {string} text The event file's content.
 * @returns {Promise<ReplayedEvent[]>}
 */
export async function replay(plugin, text) {
  const bound = bindPlugin(plugin);
  const lastSeen = new Map();
  const replayed = [];
  const lines = text.split('\n');
  for (let index = 0; index < lines.length; index++) {
    if (lines[index].trim() === '') {
      continue;
    }
    const line = index + 1;
    let event;
    try {
      event = JSON.parse(lines[index]);
    } catch (error) {
      throw new Error(`line ${line}: not JSON: ${error.message}`);
    }
    const type = WATCH_TYPES[event?.type];
    if (type === undefined) {
      throw new Error(`line ${line}: unknown event type ${JSON.stringify(event?.type)}`);
    }
    const { object } = event;
    const kind = GroupVersionKind.ofObject(object);
    const context = contextFor(object, {
      isInitialList: Boolean(event.initial),
      isResync: Boolean(event.resync),
      finalStateUnknown: Boolean(event.finalStateUnknown),
    });
    const json = JSON.stringify(object);
    const identity = `${kind}/${context.key}`;
    let result;
    if (type === 'add') {
      cacheInsertJson(kind, json);
      result = await deliverOne(bound, 'add', context, json);
    } else if (type === 'update') {
      const old = event.old === undefined ? lastSeen.get(identity) : JSON.stringify(event.old);
      if (old === undefined) {
        throw new Error(`line ${line}: an update of ${context.key} with no old state recorded or seen before`);
      }
      cacheInsertJson(kind, json);
      result = await deliverOne(bound, 'update', context, json, old);
    } else {
      cacheRemove(kind, objects.namespace(object), objects.name(object));
      result = await deliverOne(bound, 'delete', context, json);
    }
    lastSeen.set(identity, json);
    replayed.push({ line, type, key: context.key, result, logs: takeLogs() });
  }
  return replayed;
}
