// Hand-written declarations of the SDK surface (src/index.js). The records
// of the contract are generated from wit/ (the repository's wit/0.5.0 with
// its deps) into ./wit/ by scripts/wit-types.js, except 0.3.0's `types`,
// which jco 1.35's generator drops (it writes one file per interface name,
// and 0.2.0's `types` takes it): it is declared by hand in ./wit-types-0.3.0.d.ts.
/// <reference path="./wit/plugin.d.ts" />
/// <reference path="./wit-types-0.3.0.d.ts" />

import type * as Wit from 'herald:plugin/types@0.2.0';
import type * as Wit030 from 'herald:plugin/types@0.3.0';
import type * as WitKube from 'herald:plugin/kube@0.2.0';
import type * as WitEvents from 'herald:plugin/events@0.2.0';
import type * as WitAdmission from 'herald:plugin/admission@0.5.0';

/** The contract's `group-version-kind` record. */
export type GroupVersionKindRecord = Wit.GroupVersionKind;
/** The contract's `subscription` record (what `Subscription.toRecord()` gives). */
export type SubscriptionRecord = Wit.Subscription;
/** The contract's `limits` record. */
export type LimitsRecord = Wit.Limits;
/** The contract's `manifest` record (what the component's `manifest` export returns; 0.3.0's). */
export type ManifestRecord = Wit030.Manifest;
/** The contract's `metric-definition` record (what `Metric.toRecord()` gives). */
export type MetricDefinitionRecord = Wit030.MetricDefinition;
/** The contract's `index-definition` record (what `Index.toRecord()` gives). */
export type IndexDefinitionRecord = Wit030.IndexDefinition;
/** The contract's `write-rule` record (what `WriteRule.toRecord()` gives). */
export type WriteRuleRecord = Wit.WriteRule;
/** The contract's `object-reference` record of an event. */
export type ObjectReferenceRecord = WitEvents.ObjectReference;
/** The contract's `event` record (what `events.event()` builds and the fake host records). */
export type EventRecord = WitEvents.Event;
/** The contract's `kube-error` variant, as a host import throws it (`{payload}`). */
export type KubeErrorRecord = WitKube.KubeError;
/** The contract's `event-context` record, as the host sends it. */
export type EventContextRecord = Wit.EventContext;
/** The contract's admission `rule` record (what `AdmissionRule.toRecord()` gives). */
export type AdmissionRuleRecord = WitAdmission.Rule;
/** The contract's `webhook` record (what `Webhook.toRecord()` gives). */
export type WebhookRecord = WitAdmission.Webhook;
/** The contract's `webhooks` record (what the component's `admission.declare` export returns). */
export type WebhooksRecord = WitAdmission.Webhooks;
/** The contract's admission `review` record, as the host sends it. */
export type AdmissionReviewRecord = WitAdmission.Review;
/** The contract's `verdict` record (what `Verdict.toRecord()` gives). */
export type VerdictRecord = WitAdmission.Verdict;
/** The contract's `mutation` record (what `Mutation.toRecord()` gives). */
export type MutationRecord = WitAdmission.Mutation;

/** Anything that names a kind: a `GroupVersionKind` or a `{group, version, kind}` record. */
export type KindLike = GroupVersionKind | GroupVersionKindRecord;

/**
 * A Kubernetes object as parsed JSON. The well-known metadata fields are
 * typed; everything else is `any`.
 */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    resourceVersion?: string;
    uid?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: OwnerReference[];
    [field: string]: any;
  };
  [field: string]: any;
}

/** One entry of `metadata.ownerReferences`. */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** A handler failure with a message; the host records the message. */
export class HeraldError extends Error {
  constructor(message: string, options?: { cause?: unknown });
  /** A new error whose message is prefixed with what was being done. */
  context(doing: string): HeraldError;
}

/** A Kubernetes group, version and kind; the core group is `''`. Immutable. */
export class GroupVersionKind {
  constructor(group: string, version: string, kind: string);
  /** The API group; empty for the core group. */
  readonly group: string;
  /** The version within the group, e.g. `v1`. */
  readonly version: string;
  /** The kind, e.g. `Deployment`. */
  readonly kind: string;
  /** A kind from a `GroupVersionKind`, a `{group, version, kind}` record, or an object with `apiVersion` and `kind`. */
  static from(value: KindLike | { apiVersion: string; kind: string }): GroupVersionKind;
  /** The kind of a Kubernetes object, from its `apiVersion` and `kind`. */
  static ofObject(object: { apiVersion?: string; kind?: string }): GroupVersionKind;
  /** `group/version`, or `version` for the core group. */
  apiVersion(): string;
  /** Whether `other` names the same kind. */
  equals(other: KindLike): boolean;
  /** `apps/v1/Deployment`, `v1/Pod`. */
  toString(): string;
  /** The contract's record. */
  toRecord(): GroupVersionKindRecord;
}

/** How notifications for a subscription are queued. */
export declare const Delivery: {
  /** Every notification, in order (the default). */
  readonly EveryEvent: 'every-event';
  /** At most one pending notification per object key, merged while it waits. */
  readonly Coalesced: 'coalesced';
};
/** A delivery mode: `'every-event'` or `'coalesced'`. */
export type Delivery = Wit.DeliveryMode;

/** One watched resource; start from `Subscription.to(kinds.Pod)` or `Subscription.to(group, version, kind)`. */
export class Subscription {
  constructor(kind: KindLike);
  /** Every object of a kind: `Subscription.to(kinds.ConfigMap)`. */
  static to(kind: KindLike): Subscription;
  /** Every object of a kind named by strings: `Subscription.to('', 'v1', 'ConfigMap')`. */
  static to(group: string, version: string, kind: string): Subscription;
  /** Only objects in `namespace`. */
  namespace(namespace: string): this;
  /** Only objects matching the label selector, e.g. `app=web,tier!=cache`. */
  labels(selector: string): this;
  /** Only objects matching the field selector, e.g. `metadata.name=web`. */
  fields(selector: string): this;
  /** Re-deliver every cached object this often (ms, at least 1000) as a resync update. */
  resyncPeriodMs(periodMs: number | bigint): this;
  /** At most one pending notification per object, merged while it waits. */
  coalesced(): this;
  /** Sets the delivery mode. */
  delivery(delivery: Delivery): this;
  /** The contract's record. */
  toRecord(): SubscriptionRecord;
}

/** The capability `events` needs: `manifest.capability(EVENTS)`. */
export declare const EVENTS: 'events';
/** The capability `fetch` needs: `manifest.capability(HTTP)`; the operator grants the origins. */
export declare const HTTP: 'http';

/** A Kubernetes API verb a plugin may use through `kube`. */
export declare const Verb: {
  readonly Get: 'get';
  readonly Create: 'create';
  readonly Update: 'update';
  readonly Patch: 'patch';
  readonly Apply: 'apply';
  readonly Delete: 'delete';
};
/** A verb: `'get'`, `'create'`, `'update'`, `'patch'`, `'apply'` or `'delete'`. */
export type Verb = Wit.Verb;

/** The Kubernetes calls a plugin will make on one kind; the operator must grant them. */
export class WriteRule {
  constructor(kind: { group: string; kind: string });
  /** A rule on a kind: `WriteRule.to(kinds.ConfigMap)`. */
  static to(kind: { group: string; kind: string }): WriteRule;
  /** A rule on a kind named by group (`''` for core) and kind. */
  static to(group: string, kind: string): WriteRule;
  /** Adds verbs. */
  verbs(...verbs: Verb[]): this;
  /** Adds namespaces (`'*'` for all and cluster-scoped objects). */
  namespaces(...namespaces: string[]): this;
  /** Every namespace, and cluster-scoped objects. */
  allNamespaces(): this;
  /** The rule is for the `status` subresource. */
  status(): this;
  /** The contract's record. */
  toRecord(): WriteRuleRecord;
}

/** Limits a plugin asks for, capped by the operator's maxima. */
export class Limits {
  /** Deadline per handler call, in milliseconds. */
  callDeadlineMs(milliseconds: number): this;
  /** Linear memory per instance, in bytes. */
  memoryBytes(bytes: number | bigint): this;
  /** The contract's record. */
  toRecord(): LimitsRecord;
}

/** What a plugin is and what it needs. */
export class Manifest {
  /** The subscriptions, in the order given. */
  readonly subscriptions: Subscription[];
  /** @param name lowercase letters, digits and `-`. */
  constructor(name: string, version: string);
  readonly name: string;
  readonly version: string;
  /** Adds a subscription. */
  subscribe(subscription: Subscription): this;
  /** Adds a subscription to every object of a kind named by strings. */
  subscribeKind(group: string, version: string, kind: string): this;
  /** Sets the limits requested. */
  limits(limits: Limits): this;
  /** Asks for a host capability, e.g. `EVENTS`. */
  capability(capability: string): this;
  /** Declares Kubernetes calls the plugin will make. */
  write(rule: WriteRule): this;
  /** Declares a metric the plugin updates through `metrics`. */
  metric(metric: Metric): this;
  /** Declares a cache index looked up with `cache.byIndex`. */
  index(index: Index): this;
  /** Declares the validating webhook: the writes `validate(review)` decides on. */
  validating(webhook: Webhook): this;
  /** Declares the mutating webhook: the writes `mutate(review)` decides on and may change. */
  mutating(webhook: Webhook): this;
  /** What the host would refuse in the metric, index and webhook definitions. */
  problems(): string[];
  readonly metrics: Metric[];
  readonly indexes: Index[];
  readonly validatingWebhook: Webhook | undefined;
  readonly mutatingWebhook: Webhook | undefined;
  /** The contract's record. */
  toRecord(): ManifestRecord;
  /** The contract's `webhooks` record, what `admission.declare` answers. */
  webhooksRecord(): WebhooksRecord;
}

/** The operation a review is about, as AdmissionReview spells it. */
export declare const Operation: {
  readonly Create: 'CREATE';
  readonly Update: 'UPDATE';
  readonly Delete: 'DELETE';
  readonly Connect: 'CONNECT';
};
/** `'CREATE'`, `'UPDATE'`, `'DELETE'` or `'CONNECT'`. */
export type Operation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

/** What the API server does when the plugin cannot decide. */
export declare const FailurePolicy: {
  /** Refuse the write (the default). */
  readonly Fail: 'fail';
  /** Let the write through. */
  readonly Ignore: 'ignore';
};
/** `'fail'` or `'ignore'`. */
export type FailurePolicy = WitAdmission.FailurePolicy;

/** One kind of write a webhook covers; start from `AdmissionRule.to(kinds.Pod)`. */
export class AdmissionRule {
  constructor(kind: KindLike);
  /** A rule for a kind: `AdmissionRule.to(kinds.Pod)`. */
  static to(kind: KindLike): AdmissionRule;
  /** A rule for a kind named by strings: `AdmissionRule.to('apps', 'v1', 'Deployment')`. */
  static to(group: string, version: string, kind: string): AdmissionRule;
  /** Adds operations, by value or name in any case. */
  operation(...operations: (Operation | Lowercase<Operation>)[]): this;
  create(): this;
  update(): this;
  delete(): this;
  connect(): this;
  /** Covers the subresource (`'status'`) instead of the object. */
  subresource(name: string): this;
  readonly operations: Operation[];
  toRecord(): AdmissionRuleRecord;
}

/** The writes the API server sends the plugin for one decision. */
export class Webhook {
  /** Adds a rule. */
  rule(rule: AdmissionRule): this;
  /** Only namespaces whose labels match the selector. */
  namespacesLabelled(selector: string): this;
  /** Only the namespaces named. */
  inNamespaces(...names: string[]): this;
  /** Only objects whose labels match the selector. */
  objectsLabelled(selector: string): this;
  /** What happens when the plugin cannot decide (`'fail'` unless set). */
  failurePolicy(policy: FailurePolicy): this;
  /** How long the API server waits, 1 to 30 seconds (10 unless set). */
  timeoutSeconds(seconds: number): this;
  /** What the host would refuse in this webhook, declared as `role`. */
  problems(role: 'validating' | 'mutating'): string[];
  toRecord(): WebhookRecord;
}

/** Who asked for a write. */
export interface UserInfo {
  readonly username: string;
  readonly uid: string;
  readonly groups: readonly string[];
  /** Extra attributes from the authenticator: name to values. */
  readonly extra: Readonly<Record<string, readonly string[]>>;
}

/** One write the API server asks about. `T` is the object's shape. Immutable. */
export class AdmissionReview<T = KubeObject> {
  constructor(record: AdmissionReviewRecord);
  readonly uid: string;
  /** The kind of the object, in the version the plugin declared. */
  readonly kind: GroupVersionKind;
  /** The resource, plural (`pods`). */
  readonly resource: string;
  /** The subresource written; `''` for the object itself. */
  readonly subresource: string;
  readonly name: string;
  /** `''` for cluster-scoped kinds. */
  readonly namespace: string;
  readonly operation: Operation;
  readonly userInfo: UserInfo;
  /** The object as it would be stored, as JSON; `undefined` on a delete. */
  readonly objectJson: string | undefined;
  /** The object as it is stored, as JSON; `undefined` on a create. */
  readonly oldObjectJson: string | undefined;
  readonly dryRun: boolean;
  readonly optionsJson: string | undefined;
  /** The object as it would be stored, parsed once; throws a `HeraldError` on a delete. */
  readonly object: T;
  /** The object as it is stored, parsed once; throws a `HeraldError` on a create. */
  readonly oldObject: T;
  /** The operation's options, parsed; `undefined` when absent. */
  readonly options: any;
  /** `namespace/name`, or `name` when cluster-scoped. */
  readonly key: string;
  toRecord(): AdmissionReviewRecord;
}

/** A decision: allow, or refuse with a message and code; warnings either way. Immutable. */
export class Verdict {
  constructor(fields: { allowed: boolean; message?: string; code?: number; warnings?: string[] });
  readonly allowed: boolean;
  readonly message: string;
  /** The HTTP status of a refusal, 400 to 599; `undefined`: 403. */
  readonly code: number | undefined;
  readonly warnings: readonly string[];
  /** Let the write through. */
  static allow(): Verdict;
  /** Refuse it, saying why (403 unless `code` says otherwise). */
  static deny(message: string, code?: number): Verdict;
  /** The same decision with one more warning. */
  warn(warning: string): Verdict;
  toRecord(): VerdictRecord;
}

/** One operation of a JSON Patch (RFC 6902). */
export interface JsonPatchOperation {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test';
  path: string;
  value?: unknown;
  from?: string;
}

/** What `mutate` answers: a decision and at most one change. Immutable. */
export class Mutation {
  constructor(verdict: Verdict, change?: { jsonPatch?: JsonPatchOperation[]; changedObject?: object });
  readonly verdict: Verdict;
  readonly jsonPatch: JsonPatchOperation[] | undefined;
  readonly changedObject: object | undefined;
  /** Allow, unchanged. */
  static none(): Mutation;
  /** Allow with a JSON Patch. */
  static patch(operations: JsonPatchOperation[]): Mutation;
  /** Allow, changed into `changed`. */
  static object(changed: object): Mutation;
  /** Refuse, as `Verdict.deny`. */
  static deny(message: string, code?: number): Mutation;
  /** The same answer with one more warning. */
  warn(warning: string): Mutation;
  toRecord(): MutationRecord;
}

/** What a metric measures. */
export declare const MetricKind: {
  readonly Counter: 'counter';
  readonly Gauge: 'gauge';
  readonly Histogram: 'histogram';
};
/** `'counter'`, `'gauge'` or `'histogram'`. */
export type MetricKind = Wit030.MetricKind;

/** One metric the plugin updates, declared with `Manifest.metric`. */
export class Metric {
  constructor(kind: MetricKind, name: string, help: string);
  readonly kind: MetricKind;
  readonly name: string;
  readonly help: string;
  readonly labelNames: string[];
  readonly bucketBounds: number[];
  /** A counter; its name must end in `_total`. */
  static counter(name: string, help: string): Metric;
  static gauge(name: string, help: string): Metric;
  /** A histogram, with Prometheus' default buckets until `buckets()`. */
  static histogram(name: string, help: string): Metric;
  /** Adds label names; updates give one value for each, in order. */
  labels(...names: string[]): this;
  /** A histogram's bucket upper bounds, strictly increasing. */
  buckets(...bounds: number[]): this;
  /** What the host would refuse this definition for, or `undefined`. */
  problem(): string | undefined;
  toRecord(): MetricDefinitionRecord;
}

/** A secondary index of the cache, declared with `Manifest.index`, looked up with `cache.byIndex`. */
export class Index {
  constructor(name: string, kind: KindLike, by: 'label' | 'field' | 'owner', key?: string);
  readonly name: string;
  readonly kind: GroupVersionKind;
  readonly by: 'label' | 'field' | 'owner';
  readonly key: string | undefined;
  /** Objects of `kind` by the UIDs of their owners. */
  static byOwner(name: string, kind: KindLike): Index;
  /** Objects of `kind` by the value of label `key`. */
  static byLabel(name: string, kind: KindLike, key: string): Index;
  /** Objects of `kind` by the value at a field path such as `spec.nodeName`. */
  static byField(name: string, kind: KindLike, path: string): Index;
  /** The values `object` is filed under, as the host computes them. */
  values(object: KubeObject): string[];
  toRecord(): IndexDefinitionRecord;
}

/** Facts about the notification being delivered. Immutable. */
export class Context {
  constructor(fields: {
    kind: KindLike;
    resource: string;
    key: string;
    resourceVersion: string;
    isInitialList?: boolean;
    isResync?: boolean;
    finalStateUnknown?: boolean;
  });
  readonly kind: GroupVersionKind;
  readonly resource: string;
  readonly key: string;
  readonly resourceVersion: string;
  readonly isInitialList: boolean;
  readonly isResync: boolean;
  readonly finalStateUnknown: boolean;
  /** The namespace part of the key; `undefined` when cluster-scoped. */
  readonly namespace: string | undefined;
  /** The name part of the key. */
  readonly name: string;
}

/** Accessors shared by `Event` and `Update`. */
declare abstract class Notification {
  /** Everything the host said about this notification. */
  readonly context: Context;
  readonly kind: GroupVersionKind;
  readonly resource: string;
  readonly key: string;
  readonly namespace: string | undefined;
  readonly name: string;
  readonly resourceVersion: string;
  readonly isInitialList: boolean;
  readonly isResync: boolean;
  readonly finalStateUnknown: boolean;
}

/** An add or delete notification. `T` is the object's shape. */
export class Event<T = KubeObject> extends Notification {
  constructor(context: Context, json: string);
  /** The object as the JSON text the host sent. */
  readonly json: string;
  /** The object, parsed on first use; throws a `HeraldError` if it is not JSON. */
  readonly object: T;
}

/** An update notification; old and new are equal on a resync. */
export class Update<T = KubeObject> extends Notification {
  constructor(context: Context, oldJson: string, newJson: string);
  /** The previous state as JSON text; `''` when the plugin declined it (`static oldState = false`). */
  readonly oldJson: string;
  readonly newJson: string;
  /** The previous state, parsed on first use; throws a `HeraldError` when the plugin declined it (`static oldState = false`). */
  readonly old: T;
  /** The new state, parsed on first use. */
  readonly new: T;
}

/**
 * A plugin: extend it, define `manifest()`, override the handlers you need
 * (each defaults to doing nothing), and default-export the class. Throwing
 * (or rejecting) is a handler failure the host records and retries.
 * `validate` and `mutate` answer the webhooks the manifest declares; they
 * throw unless overridden (the plugin does not admit). The static
 * `oldState` and `maxBatch` say how notifications are delivered (read when
 * the component is built).
 */
export class Handler {
  /** Whether updates carry the old state (`update.old`); `false` saves its copy. Default `true`. */
  static oldState: boolean;
  /** The most notifications one call may carry (a whole number, at least 1), each handled in order. Default 1. */
  static maxBatch: number;
  manifest(): Manifest;
  onAdd(event: Event): void | Promise<void>;
  onUpdate(update: Update): void | Promise<void>;
  onDelete(event: Event): void | Promise<void>;
  validate(review: AdmissionReview): Verdict | Promise<Verdict>;
  mutate(review: AdmissionReview): Mutation | Promise<Mutation>;
}

/** What to reconcile: the primary object's namespace (`undefined` when cluster-scoped) and name. */
export class Request {
  constructor(namespace: string | undefined, name: string);
  readonly namespace: string | undefined;
  readonly name: string;
  /** `namespace/name`, or `name`. */
  toString(): string;
}

/** What a reconcile asks for next; throw to be retried with backoff. */
export class Action {
  /** Done until something changes. */
  static awaitChange(): Action;
  /** Look again after `delayMs` milliseconds. */
  static requeueAfter(delayMs: number): Action;
  /** Milliseconds until the next look, or `undefined`. */
  readonly requeueAfterMs: number | undefined;
  /** The sooner of two actions. */
  sooner(other: Action): Action;
}

/** A controller's shape: its primary kind, the kinds it owns and watches, the plugin's manifest. */
export class Controller {
  constructor(primary: KindLike, manifest: Manifest);
  readonly primary: GroupVersionKind;
  readonly manifest: Manifest;
  /** The primary kind is cluster-scoped. */
  clusterScoped(): this;
  /** Reconciles the primary kind's updates only when its generation changed. */
  generationChanged(): this;
  /** Whether `generationChanged` filters out `update`. */
  filters(update: Update): boolean;
  /** Reconciles the controller owner of every changed object of `kind`. */
  owns(kind: KindLike): this;
  /** Reconciles what `map` returns for every changed object of `kind`. */
  watches(kind: KindLike, map: (object: any) => Request[]): this;
  /** The primary keys a notification of `kind` about `object` concerns. */
  requests(kind: GroupVersionKind, object: any): Request[];
}

/** A controller: define `controller()` and `reconcile(request, object)`. */
export class Reconciler extends Handler {
  controller(): Controller;
  reconcile(request: Request, object: any | undefined): Action | void | Promise<Action | void>;
}

/** Runs `reconcile` with `name` as `object`'s finalizer (kube-rs's `finalizer`). */
export function finalizer(
  object: any,
  name: string,
  reconcile: (event: { type: 'apply' | 'cleanup'; object: any }) => Action | void | Promise<Action | void>,
): Promise<Action>;

/** Sets `condition` in `conditions` as controller-runtime's `meta.SetStatusCondition`; true when anything changed. */
export function setCondition(conditions: any[], condition: any): boolean;

/** Why a cache look-up failed. */
export class CacheError extends HeraldError {
  constructor(reason: CacheError['reason'], kind: GroupVersionKind | undefined, detail?: string);
  readonly reason: 'not-subscribed' | 'invalid-selector' | 'unknown-index' | 'decode';
  readonly kind: GroupVersionKind | undefined;
  readonly detail: string | undefined;
}

/** The cases of the contract's `kube-error`. */
export type KubeErrorKind = KubeErrorRecord['tag'];

/** Why a `kube` call or an event publish failed; `kind` says which case. */
export class KubeError extends HeraldError {
  constructor(
    kind: KubeErrorKind,
    message: string,
    details?: { causes?: KubeCause[]; retryAfterMs?: number; code?: number; reason?: string },
  );
  readonly kind: KubeErrorKind;
  /** The host's or the API server's own message (`message` is `kind: detail`). */
  readonly detail: string;
  /** Whether the same call may succeed later unchanged (too-many-requests, timeout, unavailable). */
  readonly retryable: boolean;
  /** `invalid` only: the fields at fault. */
  readonly causes?: KubeCause[];
  /** `too-many-requests` only: how long to wait, when known. */
  readonly retryAfterMs?: number;
  /** `failed` only: the HTTP status code. */
  readonly code?: number;
  /** `failed` only: the Status reason. */
  readonly reason?: string;
  /** The error for what a host import threw; anything else unchanged. */
  static fromHost(thrown: unknown): unknown;
  /** The contract's `kube-error` value. */
  toRecord(): KubeErrorRecord;
}

/** One reason the API server gave for refusing an object as invalid. */
export type KubeCause = WitKube.Cause;

/** Reads and writes through the Kubernetes API server. */
export declare namespace kube {
  type PatchType = WitKube.PatchType;
  type Propagation = WitKube.Propagation;
  const PATCH_TYPES: readonly PatchType[];
  const PROPAGATIONS: readonly Propagation[];
  /** One kind, in one namespace (or cluster-scoped). `T` is the objects' shape. */
  class Api<T = KubeObject> {
    constructor(group: string, version: string, kind: string, options?: { namespace?: string });
    constructor(kind: KindLike, options?: { namespace?: string });
    readonly kind: GroupVersionKind;
    readonly namespace: string | undefined;
    /** The object from the API server (not the cache); throws `not-found`. */
    get(name: string): T;
    /** The object read through its `status` subresource. */
    getStatus(name: string): T;
    /** Creates the object; returns it as stored. */
    create(object: Partial<T> | KubeObject | string): T;
    /** Replaces the object (verb `update`). */
    replace(name: string, object: Partial<T> | KubeObject | string): T;
    /** Patches the object (`merge` by default). */
    patch(name: string, patch: object | string, options?: { type?: PatchType }): T;
    /** Server-side applies the object as `herald.<plugin-name>`. */
    apply(name: string, object: Partial<T> | KubeObject | string, options?: { force?: boolean }): T;
    /** Deletes the object, with preconditions and propagation. */
    delete(name: string, options?: { uid?: string; resourceVersion?: string; propagation?: Propagation }): void;
    replaceStatus(name: string, object: Partial<T> | KubeObject | string): T;
    patchStatus(name: string, patch: object | string, options?: { type?: PatchType }): T;
    applyStatus(name: string, object: Partial<T> | KubeObject | string, options?: { force?: boolean }): T;
  }
  /** The same class as the top-level `KubeError`. */
  const KubeError: typeof KubeErrorClass;
  type KubeError = KubeErrorClass;
}
type KubeErrorClass = KubeError;
declare const KubeErrorClass: typeof KubeError;

/** Options of an event. */
export interface EventOptions {
  /** What the plugin did, UpperCamelCase; defaults to the reason. */
  action?: string;
  /** A second object involved. */
  related?: KubeObject;
  /** The kind of an object without `apiVersion` and `kind`. */
  kind?: KindLike;
}

/** Kubernetes Events about objects; needs the `events` capability. */
export declare namespace events {
  const CAPABILITY: 'events';
  const MAX_REASON: 128;
  const MAX_NOTE_BYTES: 1024;
  /** The reference to an object, from its `apiVersion`, `kind` and metadata. */
  function referenceTo(object: KubeObject, kind?: KindLike): ObjectReferenceRecord;
  /** The event `publish` would send. */
  function event(object: KubeObject, type: WitEvents.EventType, reason: string, note: string, options?: EventOptions): EventRecord;
  function publish(object: KubeObject, type: WitEvents.EventType, reason: string, note: string, options?: EventOptions): void;
  /** A Warning event about `object`. */
  function warning(object: KubeObject, reason: string, note: string, options?: EventOptions): void;
  /** A Normal event about `object`. */
  function normal(object: KubeObject, reason: string, note: string, options?: EventOptions): void;
}

/** Logging into the host's log, tagged with the plugin's name. */
export declare namespace log {
  /** Severity of a log line. */
  const Level: {
    readonly Trace: 'trace';
    readonly Debug: 'debug';
    readonly Info: 'info';
    readonly Warn: 'warn';
    readonly Error: 'error';
  };
  type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error';
  /** The line the level functions write: strings as is, errors as their message, the rest as JSON, joined by spaces. */
  function format(parts: unknown[]): string;
  /** Writes one line at `level`. */
  function write(level: Level, message: string): void;
  function trace(...parts: unknown[]): void;
  function debug(...parts: unknown[]): void;
  function info(...parts: unknown[]): void;
  function warn(...parts: unknown[]): void;
  function error(...parts: unknown[]): void;
}

/** Read-only look-ups in the host's informer caches (subscribed kinds only). */
export declare namespace cache {
  /** The cached object, parsed, or `undefined`. `namespace` is `undefined` for cluster-scoped kinds. */
  function get<T = KubeObject>(kind: KindLike, namespace: string | undefined | null, name: string): T | undefined;
  /** Every cached object of `kind`, optionally only in `namespace` and matching `labelSelector`. */
  function list<T = KubeObject>(kind: KindLike, namespace?: string | null, labelSelector?: string | null): T[];
  /** As `get`, as JSON text. */
  function getJson(kind: KindLike, namespace: string | undefined | null, name: string): string | undefined;
  /** As `list`, as JSON texts. */
  function listJson(kind: KindLike, namespace?: string | null, labelSelector?: string | null): string[];
  /** The cached objects the manifest's index `name` files under `value` (only in `namespace`, if given), sorted by key. */
  function byIndex<T = KubeObject>(name: string, value: string, namespace?: string): T[];
  /** As `byIndex`, as JSON texts. */
  function byIndexJson(name: string, value: string, namespace?: string): string[];
  /** The label selector string for a `spec.selector`; `undefined` when it selects everything. */
  function labelSelector(selector: {
    matchLabels?: Record<string, string>;
    matchExpressions?: { key: string; operator: string; values?: string[] }[];
  } | undefined): string | undefined;
}

/** The operator's configuration for this plugin. */
export declare namespace config {
  /** The configuration, parsed, or `undefined` when there is none. */
  function get<T = any>(): T | undefined;
  /** The configuration as JSON text, or `undefined`. */
  function raw(): string | undefined;
}

/** Helpers for Kubernetes objects as parsed JSON. */
export declare namespace objects {
  function name(object: KubeObject | undefined): string;
  function namespace(object: KubeObject | undefined): string | undefined;
  /** `namespace/name`, or `name` when cluster-scoped. */
  function key(object: KubeObject | undefined): string;
  function labels(object: KubeObject | undefined): Record<string, string>;
  function annotations(object: KubeObject | undefined): Record<string, string>;
  /** The owner reference with `controller: true`. */
  function controllerOf(object: KubeObject | undefined): OwnerReference | undefined;
  /** Keeps the first `max` characters of a longer text, marking the cut: `truncate('abcdefgh', 4)` is `abcd…(8 chars)`. */
  function truncate(text: string, max: number): string;
}

/** Updates of a counter. */
declare class CounterSeries {
  /** The series with these label values, one per declared label name. */
  with(...values: string[]): this;
  inc(): void;
  add(value: number): void;
}
/** Updates of a gauge. */
declare class GaugeSeries {
  with(...values: string[]): this;
  set(value: number): void;
  add(value: number): void;
  inc(): void;
  dec(): void;
}
/** Updates of a histogram. */
declare class HistogramSeries {
  with(...values: string[]): this;
  observe(value: number): void;
}

/** The plugin's own metrics: `metrics.counter('alerts_total').with('shop').inc()`. */
export declare namespace metrics {
  function counter(name: string): CounterSeries;
  function gauge(name: string): GaugeSeries;
  function histogram(name: string): HistogramSeries;
}

/** The work queue. */
export declare namespace workqueue {
  /** Deliver the object of the call under way again after `delayMs` milliseconds (coalesced subscriptions). */
  function requeueAfter(delayMs: number | bigint): void;
}

/** The deadline of the call under way. */
export declare namespace deadline {
  /** Milliseconds left before the call's deadline; 0 once it has passed. */
  function remainingMs(): number;
}

/** Which cluster (world 0.6.0): the call's, the plugin's, another for a while. */
export declare namespace cluster {
  /** The cluster of the call under way: the notification's, or the one `within` runs against. */
  function current(): string;
  /** The clusters the plugin is delivered notifications from, sorted. */
  function names(): string[];
  /** Runs `work` against the cluster `name` (one of `names()`), then goes back; returns what it returned. */
  function within<T>(name: string, work: () => T): T;
}

/** Common kinds as `GroupVersionKind` constants. */
export declare namespace kinds {
  const Pod: GroupVersionKind;
  const ConfigMap: GroupVersionKind;
  const Secret: GroupVersionKind;
  const Service: GroupVersionKind;
  const Namespace: GroupVersionKind;
  const Node: GroupVersionKind;
  const Deployment: GroupVersionKind;
  const ReplicaSet: GroupVersionKind;
  const StatefulSet: GroupVersionKind;
  const DaemonSet: GroupVersionKind;
  const Job: GroupVersionKind;
  const CronJob: GroupVersionKind;
  const Ingress: GroupVersionKind;
  const NetworkPolicy: GroupVersionKind;
}

/** The fields of common kinds plugins read, for `Event<Pod>`, `cache.get<Deployment>(...)`, `new kube.Api<ConfigMap>(...)`. */
export interface Pod extends KubeObject {
  spec?: {
    nodeName?: string;
    containers?: { name: string; image?: string; [field: string]: any }[];
    initContainers?: { name: string; image?: string; [field: string]: any }[];
    [field: string]: any;
  };
  status?: {
    phase?: string;
    containerStatuses?: { name: string; ready?: boolean; restartCount?: number; [field: string]: any }[];
    [field: string]: any;
  };
}
export interface Deployment extends KubeObject {
  spec?: { replicas?: number; selector?: { matchLabels?: Record<string, string> }; [field: string]: any };
  status?: { replicas?: number; readyReplicas?: number; availableReplicas?: number; updatedReplicas?: number; [field: string]: any };
}
export interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
}

