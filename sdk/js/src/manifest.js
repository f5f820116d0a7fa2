/**
 * The manifest builder: what a plugin watches and what it asks for.
 *
 * Builders are written with chained calls and read back with `toRecord()`,
 * which gives the plain record the contract carries (`herald:plugin/types`
 * `manifest`, `subscription`, `limits`, `write-rule`).
 *
 * Write rules and capabilities are what the operator must grant: a plugin
 * declaring more than its grant is not loaded, and every `kube` call is
 * checked against the rules before it leaves the host. A plugin that
 * decides on writes at admission declares its webhooks
 * (`Manifest.validating`, `Manifest.mutating`; see `admission.js`), and may
 * subscribe to nothing.
 *
 * @module
 */

import { Webhook } from './admission.js';
import { Index } from './cache.js';
import { GroupVersionKind } from './kind.js';
import { Metric } from './metrics.js';

/**
 * How notifications for a subscription are queued (the WIT `delivery-mode`).
 *
 * @readonly
 * @enum {string}
 */
export const Delivery = Object.freeze({
  /** Every notification, one at a time, in the order the informer
   * distributed them (client-go's behaviour). The default. */
  EveryEvent: 'every-event',
  /** At most one pending notification per object key, merged while it
   * waits: for level-triggered plugins that only need the latest state. */
  Coalesced: 'coalesced',
});

/**
 * The capability `events` (Kubernetes Events through the `events` namespace)
 * needs: `manifest.capability(EVENTS)`.
 */
export const EVENTS = 'events';

/**
 * The capability `fetch` (outbound HTTP over `wasi:http`) needs:
 * `manifest.capability(HTTP)`; the operator grants the origins.
 */
export const HTTP = 'http';

/**
 * A Kubernetes API verb a plugin may use through `kube` (the WIT `verb`).
 *
 * @readonly
 * @enum {string}
 */
export const Verb = Object.freeze({
  /** Read one object from the API server (`Api.get`). */
  Get: 'get',
  /** Create an object (`Api.create`). */
  Create: 'create',
  /** Replace an object (`Api.replace`); Kubernetes calls it update. */
  Update: 'update',
  /** Patch an object: merge, JSON or strategic merge patch (`Api.patch`). */
  Patch: 'patch',
  /** Server-side apply (`Api.apply`). */
  Apply: 'apply',
  /** Delete an object (`Api.delete`). */
  Delete: 'delete',
});

const VERBS = Object.values(Verb);

const U32_MAX = 0xffff_ffff;
const U64_MAX = (1n << 64n) - 1n;

function requireString(value, what) {
  if (typeof value !== 'string') {
    throw new TypeError(`${what} must be a string, got ${typeof value}`);
  }
  return value;
}

/** A non-negative whole number (number or bigint) as a bigint, saturated at `max`. */
function wholeNumber(value, what, max) {
  let big;
  if (typeof value === 'bigint') {
    big = value;
  } else if (typeof value === 'number' && Number.isInteger(value)) {
    big = BigInt(value);
  } else {
    throw new TypeError(`${what} must be a whole number, got ${String(value)}`);
  }
  if (big < 0n) {
    throw new RangeError(`${what} must not be negative, got ${String(value)}`);
  }
  return big > max ? max : big;
}

function requireWebhook(webhook, what) {
  if (!(webhook instanceof Webhook)) {
    throw new TypeError(`${what}() takes a Webhook, e.g. new Webhook().rule(AdmissionRule.to(kinds.Pod).create())`);
  }
  return webhook;
}

/**
 * One watched resource: a kind plus an optional namespace, selectors, resync
 * period and delivery mode. Start from {@link Subscription.to}.
 */
export class Subscription {
  #kind;
  #namespace = undefined;
  #labelSelector = undefined;
  #fieldSelector = undefined;
  #resyncPeriodMs = undefined;
  #delivery = Delivery.EveryEvent;

  /**
   * Every object of `kind`, in every namespace, each event delivered.
   *
   * @param {GroupVersionKind | {group: string, version: string, kind: string}} kind
   */
  constructor(kind) {
    this.#kind = GroupVersionKind.from(kind);
  }

  /**
   * Every object of a kind: a typed kind (`Subscription.to(kinds.Pod)`), a
   * `{group, version, kind}` record, or three strings
   * (`Subscription.to('apps', 'v1', 'Deployment')`, a CRD's group, version and kind).
   *
   * @param {GroupVersionKind | {group: string, version: string, kind: string} | string} kindOrGroup
   * @param {string} [version] The version, e.g. `v1`, when the kind is given as strings.
   * @param {string} [kind] The kind, e.g. `ConfigMap`, when the kind is given as strings.
   * @returns {Subscription}
   */
  static to(kindOrGroup, version, kind) {
    return new Subscription(typeof kindOrGroup === 'string' ? new GroupVersionKind(kindOrGroup, version, kind) : kindOrGroup);
  }

  /**
   * Only objects in `namespace`.
   *
   * @param {string} namespace
   * @returns {this}
   */
  namespace(namespace) {
    this.#namespace = requireString(namespace, 'namespace');
    return this;
  }

  /**
   * Only objects matching the label selector, e.g. `app=web,tier!=cache`
   * (the Rust SDK's `.labels`).
   *
   * @param {string} selector
   * @returns {this}
   */
  labels(selector) {
    this.#labelSelector = requireString(selector, 'label selector');
    return this;
  }

  /**
   * Only objects matching the field selector, e.g. `metadata.name=web`
   * (the Rust SDK's `.fields`).
   *
   * @param {string} selector
   * @returns {this}
   */
  fields(selector) {
    this.#fieldSelector = requireString(selector, 'field selector');
    return this;
  }

  /**
   * Re-deliver every cached object every `periodMs` milliseconds as
   * `onUpdate(cached, cached)` with `isResync` set. The host rejects periods
   * under one second.
   *
   * @param {number | bigint} periodMs
   * @returns {this}
   */
  resyncPeriodMs(periodMs) {
    this.#resyncPeriodMs = wholeNumber(periodMs, 'resync period (ms)', U64_MAX);
    return this;
  }

  /**
   * Deliver at most one pending notification per object, merged while it
   * waits ({@link Delivery.Coalesced}).
   *
   * @returns {this}
   */
  coalesced() {
    return this.delivery(Delivery.Coalesced);
  }

  /**
   * Sets the delivery mode.
   *
   * @param {Delivery} delivery `'every-event'` or `'coalesced'`.
   * @returns {this}
   */
  delivery(delivery) {
    if (!Object.values(Delivery).includes(delivery)) {
      throw new TypeError(`delivery must be one of ${Object.values(Delivery).join(', ')}, got ${String(delivery)}`);
    }
    this.#delivery = delivery;
    return this;
  }

  /**
   * The contract's `subscription` record. Unset options are `undefined`;
   * the resync period is a bigint (WIT `u64`).
   *
   * @returns {import('../types/index.js').SubscriptionRecord}
   */
  toRecord() {
    return {
      kind: this.#kind.toRecord(),
      namespace: this.#namespace,
      labelSelector: this.#labelSelector,
      fieldSelector: this.#fieldSelector,
      resyncPeriodMs: this.#resyncPeriodMs,
      delivery: this.#delivery,
    };
  }
}

/**
 * The Kubernetes calls a plugin will make on one kind: verbs, in some
 * namespaces, on the object itself or its `status` subresource. The host
 * refuses a rule without verbs or namespaces.
 *
 * ```js
 * WriteRule.to('networking.k8s.io', 'NetworkPolicy').verbs(Verb.Get, Verb.Apply).namespaces('shop', 'web');
 * WriteRule.to('apps', 'Deployment').verbs('patch').status().allNamespaces();
 * ```
 */
export class WriteRule {
  #group;
  #kind;
  #verbs = [];
  #subresource = undefined;
  #namespaces = [];

  /**
   * A rule on `kind` (its version is not part of the rule), with no verbs
   * and no namespaces yet.
   *
   * @param {GroupVersionKind | {group: string, kind: string}} kind
   */
  constructor(kind) {
    if (kind === null || typeof kind !== 'object') {
      throw new TypeError('WriteRule takes a kind ({group, kind}); or use WriteRule.to(group, kind)');
    }
    this.#group = requireString(kind.group, 'write rule group');
    this.#kind = requireString(kind.kind, 'write rule kind');
  }

  /**
   * A rule on a kind: a typed kind (`WriteRule.to(kinds.ConfigMap)`; its
   * version is not part of the rule), or its group (`''` for the core
   * group) and kind as strings (`WriteRule.to('apps', 'Deployment')`).
   *
   * @param {GroupVersionKind | {group: string, kind: string} | string} kindOrGroup
   * @param {string} [kind]
   * @returns {WriteRule}
   */
  static to(kindOrGroup, kind) {
    return new WriteRule(typeof kindOrGroup === 'string' ? { group: kindOrGroup, kind } : kindOrGroup);
  }

  /**
   * Adds verbs: {@link Verb} values or their names (`'patch'`).
   *
   * @param {...Verb} verbs
   * @returns {this}
   */
  verbs(...verbs) {
    for (const verb of verbs) {
      if (!VERBS.includes(verb)) {
        throw new TypeError(`unknown verb ${String(verb)}: one of ${VERBS.join(', ')}`);
      }
      if (!this.#verbs.includes(verb)) {
        this.#verbs.push(verb);
      }
    }
    return this;
  }

  /**
   * Adds namespaces the plugin will write in.
   *
   * @param {...string} namespaces
   * @returns {this}
   */
  namespaces(...namespaces) {
    for (const namespace of namespaces) {
      if (requireString(namespace, 'namespace') === '') {
        throw new TypeError('a namespace must not be empty');
      }
      if (!this.#namespaces.includes(namespace)) {
        this.#namespaces.push(namespace);
      }
    }
    return this;
  }

  /**
   * Every namespace, and cluster-scoped objects (`*`).
   *
   * @returns {this}
   */
  allNamespaces() {
    return this.namespaces('*');
  }

  /**
   * The rule is for the `status` subresource, not the object (a separate
   * grant, as in Kubernetes RBAC).
   *
   * @returns {this}
   */
  status() {
    this.#subresource = 'status';
    return this;
  }

  /**
   * The contract's `write-rule` record.
   *
   * @returns {import('../types/index.js').WriteRuleRecord}
   */
  toRecord() {
    return {
      verbs: [...this.#verbs],
      group: this.#group,
      kind: this.#kind,
      subresource: this.#subresource,
      namespaces: [...this.#namespaces],
    };
  }
}

/**
 * Limits a plugin asks for; the operator's configuration caps them, and
 * unset ones take the operator's defaults (`limits.default` in the host
 * configuration: 1 s per call, 64 MiB).
 */
export class Limits {
  #callDeadlineMs = undefined;
  #memoryBytes = undefined;

  /**
   * Asks for this deadline per handler call, in milliseconds (saturating at
   * the WIT `u32` maximum).
   *
   * @param {number} milliseconds
   * @returns {this}
   */
  callDeadlineMs(milliseconds) {
    this.#callDeadlineMs = Number(wholeNumber(milliseconds, 'call deadline (ms)', BigInt(U32_MAX)));
    return this;
  }

  /**
   * Asks for this much linear memory per instance, in bytes.
   *
   * @param {number | bigint} bytes
   * @returns {this}
   */
  memoryBytes(bytes) {
    this.#memoryBytes = wholeNumber(bytes, 'memory (bytes)', U64_MAX);
    return this;
  }

  /**
   * The contract's `limits` record; `memoryBytes` is a bigint (WIT `u64`).
   *
   * @returns {import('../types/index.js').LimitsRecord}
   */
  toRecord() {
    return { callDeadlineMs: this.#callDeadlineMs, memoryBytes: this.#memoryBytes };
  }
}

/**
 * What a plugin is and what it needs; returned by the handler's
 * `manifest()`, read once per load.
 *
 * ```js
 * new Manifest('web-watch', '1.2.0')
 *   .subscribe(Subscription.to(kinds.Pod).namespace('web').labels('app=web'))
 *   .subscribe(Subscription.to('apps', 'v1', 'Deployment').resyncPeriodMs(300_000).coalesced())
 *   .limits(new Limits().callDeadlineMs(500))
 *   .write(WriteRule.to('apps', 'Deployment').verbs(Verb.Get, Verb.Patch).namespaces('web'))
 *   .capability(EVENTS);
 * ```
 */
export class Manifest {
  #subscriptions = [];
  #limits = new Limits();
  #capabilities = [];
  #writes = [];
  #metrics = [];
  #indexes = [];
  #validating = undefined;
  #mutating = undefined;

  /**
   * A manifest with no subscriptions (the host requires at least one, or a
   * webhook), default limits and no capabilities.
   *
   * @param {string} name Unique plugin name: lowercase letters, digits and `-`.
   * @param {string} version The plugin's own version (semver advised).
   */
  constructor(name, version) {
    /** The plugin's name. */
    this.name = requireString(name, 'plugin name');
    /** The plugin's version. */
    this.version = requireString(version, 'plugin version');
  }

  /**
   * Adds a subscription.
   *
   * @param {Subscription} subscription
   * @returns {this}
   */
  subscribe(subscription) {
    if (!(subscription instanceof Subscription)) {
      throw new TypeError('subscribe() takes a Subscription, e.g. Subscription.to("", "v1", "Pod")');
    }
    this.#subscriptions.push(subscription);
    return this;
  }

  /**
   * Adds a subscription to every object of a kind named by strings, in
   * every namespace, without selectors.
   *
   * @param {string} group
   * @param {string} version
   * @param {string} kind
   * @returns {this}
   */
  subscribeKind(group, version, kind) {
    return this.subscribe(Subscription.to(group, version, kind));
  }

  /**
   * Sets the limits requested.
   *
   * @param {Limits} limits
   * @returns {this}
   */
  limits(limits) {
    if (!(limits instanceof Limits)) {
      throw new TypeError('limits() takes a Limits, e.g. new Limits().callDeadlineMs(500)');
    }
    this.#limits = limits;
    return this;
  }

  /**
   * Asks for a host capability, e.g. {@link EVENTS} (`'events'`); the
   * operator must grant it or the plugin is not loaded. Asking twice is
   * asking once.
   *
   * @param {string} capability
   * @returns {this}
   */
  capability(capability) {
    if (!this.#capabilities.includes(requireString(capability, 'capability'))) {
      this.#capabilities.push(capability);
    }
    return this;
  }

  /**
   * Declares Kubernetes calls the plugin will make (see {@link WriteRule});
   * the operator's grant must cover them or the plugin is not loaded.
   *
   * @param {WriteRule} rule
   * @returns {this}
   */
  write(rule) {
    if (!(rule instanceof WriteRule)) {
      throw new TypeError("write() takes a WriteRule, e.g. WriteRule.to('apps', 'Deployment').verbs('patch').namespaces('shop')");
    }
    this.#writes.push(rule);
    return this;
  }

  /**
   * Declares a metric the plugin updates through the `metrics` namespace
   * (see {@link Metric}).
   *
   * @param {Metric} metric
   * @returns {this}
   */
  metric(metric) {
    if (!(metric instanceof Metric)) {
      throw new TypeError("metric() takes a Metric, e.g. Metric.counter('alerts_total', 'Alerts sent')");
    }
    this.#metrics.push(metric);
    return this;
  }

  /**
   * Declares a cache index looked up with `cache.byIndex` (see {@link Index}).
   *
   * @param {Index} index
   * @returns {this}
   */
  index(index) {
    if (!(index instanceof Index)) {
      throw new TypeError("index() takes an Index, e.g. Index.byOwner('owner', kinds.ReplicaSet)");
    }
    this.#indexes.push(index);
    return this;
  }

  /**
   * Declares the plugin's validating webhook: the writes its
   * `validate(review)` decides on.
   *
   * @param {Webhook} webhook
   * @returns {this}
   */
  validating(webhook) {
    this.#validating = requireWebhook(webhook, 'validating');
    return this;
  }

  /**
   * Declares the plugin's mutating webhook: the writes its `mutate(review)`
   * decides on and may change.
   *
   * @param {Webhook} webhook
   * @returns {this}
   */
  mutating(webhook) {
    this.#mutating = requireWebhook(webhook, 'mutating');
    return this;
  }

  /**
   * What the host would refuse in the metric, index and webhook definitions
   * (empty when they look loadable): metrics breaking Prometheus' naming
   * rules or defined twice, indexes of a kind not subscribed to or declared
   * twice, webhooks without rules or operations or with a timeout outside 1
   * to 30 seconds.
   *
   * @returns {string[]}
   */
  problems() {
    const found = [];
    for (const [role, webhook] of [['validating', this.#validating], ['mutating', this.#mutating]]) {
      found.push(...(webhook?.problems(role) ?? []));
    }
    const names = new Set();
    for (const metric of this.#metrics) {
      const problem = metric.problem();
      if (problem !== undefined) {
        found.push(problem);
      }
      if (names.has(metric.name)) {
        found.push(`metric ${metric.name} is defined twice`);
      }
      names.add(metric.name);
    }
    const subscribed = this.#subscriptions.map((subscription) => GroupVersionKind.from(subscription.toRecord().kind));
    const indexNames = new Set();
    for (const index of this.#indexes) {
      if (!subscribed.some((kind) => kind.equals(index.kind))) {
        found.push(`index ${JSON.stringify(index.name)} is of ${index.kind}, which it does not subscribe to`);
      }
      if (indexNames.has(index.name)) {
        found.push(`index ${JSON.stringify(index.name)} is declared twice`);
      }
      indexNames.add(index.name);
    }
    return found;
  }

  /** The subscriptions, in the order given. @returns {Subscription[]} */
  get subscriptions() {
    return [...this.#subscriptions];
  }

  /** The declared metrics. @returns {Metric[]} */
  get metrics() {
    return [...this.#metrics];
  }

  /** The declared indexes. @returns {Index[]} */
  get indexes() {
    return [...this.#indexes];
  }

  /** The validating webhook, or `undefined`. @returns {Webhook | undefined} */
  get validatingWebhook() {
    return this.#validating;
  }

  /** The mutating webhook, or `undefined`. @returns {Webhook | undefined} */
  get mutatingWebhook() {
    return this.#mutating;
  }

  /**
   * The contract's `webhooks` record, what the component's `admission.declare`
   * export returns: `undefined` for a decision the plugin does not make.
   *
   * @returns {import('../types/index.js').WebhooksRecord}
   */
  webhooksRecord() {
    return { validating: this.#validating?.toRecord(), mutating: this.#mutating?.toRecord() };
  }

  /**
   * The contract's `manifest` record, what the component's `manifest`
   * export returns.
   *
   * @returns {import('../types/index.js').ManifestRecord}
   */
  toRecord() {
    return {
      name: this.name,
      version: this.version,
      subscriptions: this.#subscriptions.map((subscription) => subscription.toRecord()),
      limits: this.#limits.toRecord(),
      capabilities: [...this.#capabilities],
      writes: this.#writes.map((rule) => rule.toRecord()),
      metrics: this.#metrics.map((metric) => metric.toRecord()),
      indexes: this.#indexes.map((index) => index.toRecord()),
    };
  }
}
