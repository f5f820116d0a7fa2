/**
 * Controllers as controller-runtime and kube-rs authors write them: one
 * `reconcile` for a primary kind, the objects it owns and the ones it
 * watches mapped to the primary's key, and an {@link Action} telling the
 * host when to look again.
 *
 * ```js
 * export default class Rollouts extends Reconciler {
 *   controller() {
 *     return new Controller(kinds.Deployment, new Manifest('rollouts', '0.1.0')).owns(kinds.ReplicaSet);
 *   }
 *   reconcile(request, deployment) {
 *     if (deployment === undefined) return Action.awaitChange(); // gone
 *     return Action.requeueAfter(300_000);
 *   }
 * }
 * ```
 *
 * The names are the Rust SDK's (`herald_sdk::reconcile`: `Controller`,
 * `owns`, `watches`, `Request`, `Action`, `finalizer`, `set_condition`),
 * which follow kube-rs's; the Go SDK keeps controller-runtime's.
 *
 * **What the host guarantees, and how.** Every kind the controller names is
 * subscribed with coalesced delivery: a burst of changes to one object is
 * one call with its latest state, and a plugin's calls never overlap, so one
 * key is never reconciled twice at once. Each notification is mapped to the
 * primary keys it concerns (its own key for the primary kind; its
 * controller owner for an owned kind; what the map function returns for a
 * watched kind), and each key is reconciled against the cache's current
 * state of the primary object, which is at least as new as the
 * notification: every change is followed by a reconcile that sees it.
 * `Action.awaitChange()` (or returning nothing) is done;
 * `Action.requeueAfter(ms)` asks for the notification again after the delay;
 * a throw is retried with the host's per-key exponential backoff. When one
 * notification maps to several keys each is reconciled, the shortest
 * requeue wins, and a throw retries the notification.
 *
 * @module
 */

import * as cache from './cache.js';
import { Handler } from './handler.js';
import { GroupVersionKind } from './kind.js';
import { Api, KubeError } from './kube.js';
import { Subscription } from './manifest.js';
import { controllerOf } from './objects.js';
import { requeueAfter } from './workqueue.js';

/**
 * What to reconcile: the primary object's namespace (`undefined` for a
 * cluster-scoped kind) and name.
 */
export class Request {
  /**
   * @param {string | undefined} namespace
   * @param {string} name
   */
  constructor(namespace, name) {
    /** Its namespace; `undefined` when cluster-scoped. */
    this.namespace = namespace || undefined;
    /** Its name. */
    this.name = name;
    Object.freeze(this);
  }

  /** `namespace/name`, or `name` when cluster-scoped. */
  toString() {
    return this.namespace === undefined ? this.name : `${this.namespace}/${this.name}`;
  }
}

/**
 * What a reconcile asks for next (kube-rs's `Action`, controller-runtime's
 * `ctrl.Result`). An error is not an action: throw it to be retried with
 * backoff.
 */
export class Action {
  /** @param {number | undefined} requeueAfterMs */
  constructor(requeueAfterMs) {
    /** Milliseconds until the next look, or `undefined`: done until something changes. */
    this.requeueAfterMs = requeueAfterMs;
    Object.freeze(this);
  }

  /** Done until something changes. */
  static awaitChange() {
    return new Action(undefined);
  }

  /**
   * Look again after `delayMs` milliseconds, even if nothing changes.
   *
   * @param {number} delayMs
   */
  static requeueAfter(delayMs) {
    if (typeof delayMs !== 'number' || !Number.isFinite(delayMs) || delayMs < 0) {
      throw new RangeError(`Action.requeueAfter takes a non-negative number of milliseconds, got ${String(delayMs)}`);
    }
    return new Action(Math.floor(delayMs));
  }

  /**
   * The sooner of two actions.
   *
   * @param {Action} other
   * @returns {Action}
   */
  sooner(other) {
    if (this.requeueAfterMs === undefined) return other;
    if (other.requeueAfterMs === undefined || this.requeueAfterMs < other.requeueAfterMs) return this;
    return other;
  }
}

const PRIMARY = Symbol('primary');
const OWNED = Symbol('owned');

/**
 * The controller's shape: its primary kind (`For`), the kinds it owns and
 * watches, and the plugin's manifest, to which each is added as a coalesced
 * subscription.
 */
export class Controller {
  #manifest;
  #primary;
  #clusterScoped = false;
  #generationChanged = false;
  /** @type {Array<[GroupVersionKind, symbol | ((object: any) => Request[])]>} */
  #sources;

  /**
   * @param {GroupVersionKind | {group: string, version: string, kind: string}} primary
   * @param {import('./manifest.js').Manifest} manifest
   */
  constructor(primary, manifest) {
    this.#primary = GroupVersionKind.from(primary);
    this.#manifest = manifest.subscribe(Subscription.to(this.#primary).coalesced());
    this.#sources = [[this.#primary, PRIMARY]];
  }

  /** The primary kind. */
  get primary() {
    return this.#primary;
  }

  /** The plugin's manifest, with the controller's subscriptions. */
  get manifest() {
    return this.#manifest;
  }

  /** Says the primary kind is cluster-scoped: an owned object's owner is looked up without its namespace. */
  clusterScoped() {
    this.#clusterScoped = true;
    return this;
  }

  /**
   * Reconciles the primary kind's updates only when its
   * `metadata.generation` changed (controller-runtime's
   * `GenerationChangedPredicate`): a status or metadata change, or a
   * periodic resync, reconciles nothing. Adds, deletes, requeues, and the
   * owned and watched kinds' changes still reconcile.
   */
  generationChanged() {
    this.#generationChanged = true;
    return this;
  }

  /**
   * Whether `generationChanged` filters out the update: one of the primary
   * kind with the same generation, and a change of the object (a requeue
   * re-delivers the same resourceVersion) or a resync.
   *
   * @param {import('./event.js').Update} update
   * @returns {boolean}
   */
  filters(update) {
    const kind = update.kind;
    if (!this.#generationChanged || kind.group !== this.#primary.group || kind.kind !== this.#primary.kind) {
      return false;
    }
    const [old, updated] = [update.old?.metadata ?? {}, update.new?.metadata ?? {}];
    return old.generation === updated.generation && (old.resourceVersion !== updated.resourceVersion || update.isResync);
  }

  /**
   * Also reconciles the controller owner of every object of `kind` that
   * changes (`Owns`): its owner reference with `controller: true` whose kind
   * and group are the primary's.
   *
   * @param {GroupVersionKind | {group: string, version: string, kind: string}} kind
   */
  owns(kind) {
    return this.#source(kind, OWNED);
  }

  /**
   * Also reconciles what `map` returns (an array of {@link Request}) for
   * every object of `kind` that changes (`Watches` with a map function). A
   * map that needs other objects reads them from the cache; an index keeps
   * it to the objects that match.
   *
   * @param {GroupVersionKind | {group: string, version: string, kind: string}} kind
   * @param {(object: any) => Request[]} map
   */
  watches(kind, map) {
    if (typeof map !== 'function') {
      throw new TypeError(`watches(${GroupVersionKind.from(kind)}) needs a function mapping an object to Requests`);
    }
    return this.#source(kind, map);
  }

  #source(kind, source) {
    const gvk = GroupVersionKind.from(kind);
    this.#manifest = this.#manifest.subscribe(Subscription.to(gvk).coalesced());
    this.#sources.push([gvk, source]);
    return this;
  }

  /**
   * The primary keys a notification of `kind` about `object` concerns.
   *
   * @param {GroupVersionKind} kind
   * @param {any} object
   * @returns {Request[]}
   */
  requests(kind, object) {
    const found = this.#sources.find(([known]) => known.group === kind.group && known.kind === kind.kind);
    if (found === undefined) {
      throw new Error(`a notification of ${kind}, which the controller neither reconciles, owns nor watches`);
    }
    const [, source] = found;
    const metadata = object?.metadata ?? {};
    if (source === PRIMARY) {
      return [new Request(metadata.namespace, metadata.name)];
    }
    if (source === OWNED) {
      const owner = controllerOf(object);
      if (owner === undefined || owner.kind !== this.#primary.kind) return [];
      const slash = owner.apiVersion.lastIndexOf('/');
      if ((slash < 0 ? '' : owner.apiVersion.slice(0, slash)) !== this.#primary.group) return [];
      return [new Request(this.#clusterScoped ? undefined : metadata.namespace, owner.name)];
    }
    const requests = source(object);
    if (!Array.isArray(requests) || !requests.every((r) => r instanceof Request)) {
      throw new TypeError(`the map function of ${kind} returned ${String(requests)}, not an array of Requests`);
    }
    return requests;
  }
}

/**
 * A controller: extend it, define `controller()` and `reconcile(request,
 * object)`, and default-export the class. Its `manifest()` and handlers are
 * this class's: each notification is mapped to its primary keys and each
 * key reconciled. `reconcile` may be `async`.
 */
export class Reconciler extends Handler {
  #controller;

  /**
   * What it reconciles, owns and watches, and the plugin's manifest. Must be overridden.
   *
   * @returns {Controller}
   */
  controller() {
    throw new Error(`${this.constructor.name} must define controller()`);
  }

  /**
   * Brings the world in line with `object`, the cache's current state of
   * the primary object `request` names (`undefined`: it is gone). Must be
   * overridden.
   *
   * @param {Request} request
   * @param {any} object
   * @returns {Action | void | Promise<Action | void>}
   */
  // eslint-disable-next-line no-unused-vars
  reconcile(request, object) {
    throw new Error(`${this.constructor.name} must define reconcile()`);
  }

  manifest() {
    return this.#shape().manifest;
  }

  onAdd(event) {
    return this.#notified(event.kind, event.object);
  }

  onUpdate(event) {
    if (this.#shape().filters(event)) return Promise.resolve();
    return this.#notified(event.kind, event.new);
  }

  onDelete(event) {
    return this.#notified(event.kind, event.object);
  }

  #shape() {
    this.#controller ??= this.controller();
    return this.#controller;
  }

  async #notified(kind, object) {
    const controller = this.#shape();
    let next = Action.awaitChange();
    let failed;
    for (const request of controller.requests(kind, object)) {
      try {
        next = next.sooner(await this.#reconcileOne(controller, request));
      } catch (error) {
        failed ??= error; // every key is tried; the first failure is thrown
      }
    }
    if (failed !== undefined) throw failed;
    if (next.requeueAfterMs !== undefined) requeueAfter(next.requeueAfterMs);
  }

  async #reconcileOne(controller, request) {
    let current;
    try {
      current = cache.get(controller.primary, request.namespace, request.name);
    } catch (error) {
      throw new Error(`reading ${controller.primary} ${request}: ${error.message}`, { cause: error });
    }
    let action;
    try {
      action = await this.reconcile(request, current);
    } catch (error) {
      throw new Error(`reconciling ${request}: ${error?.message ?? String(error)}`, { cause: error });
    }
    if (action === undefined || action === null) return Action.awaitChange();
    if (!(action instanceof Action)) {
      throw new TypeError(`reconciling ${request}: reconcile returned ${JSON.stringify(action)}, not an Action`);
    }
    return action;
  }
}

/** How many objects each of an instance's finalizer records keeps (a forgotten one costs at most a repeated, idempotent write or cleanup). */
const REMEMBERED = 1024;

/**
 * What this instance did to objects' finalizers, keyed by kind, object and
 * finalizer, oldest first: the resourceVersion each finalizer change was
 * written at, and the UID of the object each cleanup succeeded for.
 *
 * @type {{written: Map<string, string>, cleaned: Map<string, string>}}
 */
const records = { written: new Map(), cleaned: new Map() };

/**
 * Records `value` for `key` in `record`, forgetting the oldest key when full.
 *
 * @param {Map<string, string>} record
 * @param {string} key
 * @param {string} value
 */
function keep(record, key, value) {
  record.delete(key);
  if (record.size === REMEMBERED) record.delete(record.keys().next().value);
  record.set(key, value);
}

/**
 * Runs `reconcile` with `name` as `object`'s finalizer, as kube-rs's
 * `finalizer`: a live object without it gets it added (the change brings
 * the next reconcile); a live object with it is reconciled with
 * `{type: 'apply', object}`; an object being deleted with it is cleaned up
 * (`{type: 'cleanup', object}`), then the finalizer removed; one being
 * deleted without it needs nothing. Both writes are merge patches carrying
 * the `resourceVersion` read, so a concurrent change fails with a conflict
 * and the reconcile is retried (a cleanup must be idempotent). The plugin
 * needs `patch` on the kind in its write rules.
 *
 * A state of the object this instance already wrote its finalizer change at
 * (the same `resourceVersion`: the cache has not caught up with the write
 * yet, and another notification mapped here) is left alone: the write's own
 * change brings the next reconcile. So a cleanup that succeeded is not run
 * again on the stale state, and an add does not fail with a conflict. Nor is
 * a cleanup that succeeded run again when the finalizer's removal fails (a
 * conflict with a write that landed after the deletion, say): the instance
 * remembers the object (by UID) as cleaned up, and the retry only removes
 * the finalizer. Only a new instance (a host restart, a hot swap, a trap)
 * cleans up again, as any controller stopped between the two steps.
 *
 * @param {any} object
 * @param {string} name
 * @param {(event: {type: 'apply' | 'cleanup', object: any}) => Action | void | Promise<Action | void>} reconcile
 * @returns {Promise<Action>}
 */
export async function finalizer(object, name, reconcile) {
  const metadata = object?.metadata ?? {};
  if (typeof metadata.name !== 'string' || metadata.name === '') {
    throw new Error(`finalizer ${name}: the object has no name`);
  }
  const kind = GroupVersionKind.ofObject(object);
  const api = new Api(kind, { namespace: metadata.namespace || undefined });
  const key = `${kind} ${metadata.namespace ?? ''}/${metadata.name} ${name}`;
  const version = metadata.resourceVersion;
  if (version && records.written.get(key) === version) {
    return Action.awaitChange();
  }
  const finalizers = [...(metadata.finalizers ?? [])];
  const has = finalizers.includes(name);
  const deleting = Boolean(metadata.deletionTimestamp);
  const write = (kept, doing) => {
    try {
      api.patch(metadata.name, { metadata: { finalizers: kept, resourceVersion: version } });
    } catch (error) {
      if (error instanceof KubeError) error.message = `${doing} finalizer ${name}: ${error.message}`;
      throw error;
    }
    if (version) keep(records.written, key, version);
  };
  if (!deleting && !has) {
    write([...finalizers, name], 'adding');
    return Action.awaitChange();
  }
  if (!deleting) {
    return (await reconcile({ type: 'apply', object })) ?? Action.awaitChange();
  }
  if (has) {
    const uid = metadata.uid;
    let action = Action.awaitChange();
    if (!uid || records.cleaned.get(key) !== uid) {
      action = (await reconcile({ type: 'cleanup', object })) ?? action;
      if (uid) keep(records.cleaned, key, uid);
    }
    write(finalizers.filter((f) => f !== name), 'removing');
    return action;
  }
  return Action.awaitChange();
}

/**
 * Sets `condition` (a `metav1.Condition`: `type`, `status`, `reason`,
 * `message`, `observedGeneration`, `lastTransitionTime`) in `conditions`
 * as controller-runtime's `meta.SetStatusCondition`: a new type is added as
 * given; a known one takes the new status, reason, message and
 * `observedGeneration`, and its `lastTransitionTime` moves only when the
 * status changes. True when anything changed.
 *
 * @param {any[]} conditions
 * @param {any} condition
 * @returns {boolean}
 */
export function setCondition(conditions, condition) {
  const existing = conditions.find((c) => c.type === condition.type);
  if (existing === undefined) {
    conditions.push({ ...condition });
    return true;
  }
  const before = JSON.stringify(existing);
  if (existing.status !== condition.status) {
    existing.status = condition.status;
    existing.lastTransitionTime = condition.lastTransitionTime;
  }
  for (const key of ['reason', 'message', 'observedGeneration']) {
    if (key in condition) existing[key] = condition[key];
    else delete existing[key];
  }
  return JSON.stringify(existing) !== before;
}
