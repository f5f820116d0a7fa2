// Hand-written declarations of the SDK surface (src/index.js). The records
// of the contract are generated from wit/herald.wit (a copy of the
// repository's wit/0.2.0/herald.wit) into ./wit/ by
// scripts/wit-types.js.
/// <reference path="./wit/plugin.d.ts" />

import type * as Wit from 'herald:plugin/types@0.2.0';

/** The contract's `group-version-kind` record. */
export type GroupVersionKindRecord = Wit.GroupVersionKind;
/** The contract's `subscription` record (what `Subscription.toRecord()` gives). */
export type SubscriptionRecord = Wit.Subscription;
/** The contract's `limits` record. */
export type LimitsRecord = Wit.Limits;
/** The contract's `manifest` record (what the component's `manifest` export returns). */
export type ManifestRecord = Wit.Manifest;
/** The contract's `event-context` record, as the host sends it. */
export type EventContextRecord = Wit.EventContext;

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

/** One watched resource; start from `Subscription.to(group, version, kind)`. */
export class Subscription {
  constructor(kind: KindLike);
  /** Every object of a kind: `Subscription.to('', 'v1', 'ConfigMap')`. */
  static to(group: string, version: string, kind: string): Subscription;
  /** Only objects in `namespace`. */
  namespace(namespace: string): this;
  /** Only objects matching the label selector, e.g. `app=web,tier!=cache`. */
  labelSelector(selector: string): this;
  /** Only objects matching the field selector, e.g. `metadata.name=web`. */
  fieldSelector(selector: string): this;
  /** Re-deliver every cached object this often (ms, at least 1000) as a resync update. */
  resyncPeriodMs(periodMs: number | bigint): this;
  /** At most one pending notification per object, merged while it waits. */
  coalesced(): this;
  /** Sets the delivery mode. */
  delivery(delivery: Delivery): this;
  /** The contract's record. */
  toRecord(): SubscriptionRecord;
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
  /** Asks for a host capability. */
  capability(capability: string): this;
  /** The contract's record. */
  toRecord(): ManifestRecord;
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
  readonly oldJson: string;
  readonly newJson: string;
  /** The previous state, parsed on first use. */
  readonly old: T;
  /** The new state, parsed on first use. */
  readonly new: T;
}

/**
 * A plugin: extend it, define `manifest()`, override the handlers you need
 * (each defaults to doing nothing), and default-export the class. Throwing
 * (or rejecting) is a handler failure the host records and retries.
 */
export class Handler {
  manifest(): Manifest;
  onAdd(event: Event): void | Promise<void>;
  onUpdate(update: Update): void | Promise<void>;
  onDelete(event: Event): void | Promise<void>;
}

/** Why a cache look-up failed. */
export class CacheError extends HeraldError {
  constructor(reason: CacheError['reason'], kind: GroupVersionKind, detail?: string);
  readonly reason: 'not-subscribed' | 'invalid-selector' | 'decode';
  readonly kind: GroupVersionKind;
  readonly detail: string | undefined;
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
