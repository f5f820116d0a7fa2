// Declarations of the fake host (src/testing.js).
import type {
  AdmissionReview,
  Context,
  Event,
  EventRecord,
  GroupVersionKind,
  KindLike,
  KubeError,
  KubeObject,
  Manifest,
  ManifestRecord,
  Update,
  Verb,
  kube,
  log,
} from './index.js';

/** One line a plugin logged. */
export interface LogLine {
  level: log.Level;
  message: string;
}

/** What the component answers the host: ok, or the error message. */
export type CallResult = { tag: 'ok'; val?: undefined } | { tag: 'err'; val: string };

/** One call a plugin made through `kube`, as the host received it. */
export interface KubeCall {
  /** The verb grants are checked against (`update` is a replace). */
  verb: Verb;
  kind: GroupVersionKind;
  namespace: string | undefined;
  name: string;
  /** `namespace/name`, or `name`. */
  key: string;
  subresource: string | undefined;
  /** The JSON text sent: the object, or the patch. */
  body: string | undefined;
  /** The body, parsed. */
  object: any;
  patchType: kube.PatchType | undefined;
  force: boolean;
  uid: string | undefined;
  resourceVersion: string | undefined;
  propagation: kube.Propagation | undefined;
  /** The cluster it went to: the call's, or the one targeted. */
  cluster: string;
}

/** Every kube call since the last take, removed. */
export function takeKubeCalls(): KubeCall[];
/** Scripts the answer to matching kube calls (first match wins; `times` left out: every time). */
export function scriptKube(script: {
  verb?: Verb;
  kind?: KindLike;
  namespace?: string;
  name?: string;
  subresource?: string;
  returns?: unknown;
  throws?: KubeError;
  times?: number;
}): void;
/** Every event published since the last take, removed. */
export function takeEvents(): EventRecord[];
/** Makes the next `times` publishes (left out: all) throw. */
export function scriptEvents(script: { throws: KubeError; times?: number }): void;
/** Refuses calls outside the manifest's write rules and events without its capability; `undefined` stops. */
export function enforce(manifestOrPlugin: Manifest | unknown): void;

/** Forgets the configuration, logs, subscriptions, cache, kube calls, events, scripts and enforcement. */
export function reset(): void;
/** Sets the configuration, as a value (passed as JSON). */
export function setConfig(value: unknown): void;
/** Sets the configuration as JSON text. */
export function setConfigJson(json: string): void;
/** Removes the configuration. */
export function clearConfig(): void;
/** Every line logged since the last take, removed. */
export function takeLogs(): LogLine[];
/** The text of every line logged since the last take, removed. */
export function takeMessages(): string[];
/** Makes `kind` visible to cache look-ups. */
export function subscribe(kind: KindLike): void;
/** Puts an object in the cache (kind from its `apiVersion`/`kind` unless given) and subscribes to its kind. */
export function cacheInsert(object: KubeObject, kind?: KindLike): void;
/** Puts an object given as JSON text in the cache under `kind`. */
export function cacheInsertJson(kind: KindLike, json: string): void;
/** Removes `namespace/name` of `kind` from the cache. */
export function cacheRemove(kind: KindLike, namespace: string | undefined, name: string): void;
/** The plural resource name the host's replayer guesses for a kind. */
export function resourceOf(kind: string): string;
/** The context the host would send with `object`. */
export function contextFor(
  object: KubeObject,
  overrides?: { kind?: GroupVersionKind; resource?: string; isInitialList?: boolean; isResync?: boolean; finalStateUnknown?: boolean },
): Context;
/** The event `onAdd` would receive. */
export function added<T extends KubeObject>(object: T): Event<T>;
/** The event `onUpdate` would receive. */
export function updated<T extends KubeObject>(old: T, updated: T): Update<T>;
/** The event `onDelete` would receive. */
export function deleted<T extends KubeObject>(object: T): Event<T>;
/** An initial-list add. */
export function listed<T extends KubeObject>(object: T): Event<T>;
/** A resync update (old and new equal). */
export function resynced<T extends KubeObject>(object: T): Update<T>;
/** A delete inferred from a relist. */
export function vanished<T extends KubeObject>(object: T): Event<T>;
/** The review the API server sends when `object` is created, by user `admin`. */
export function creating<T extends KubeObject>(object: T): AdmissionReview<T>;
/** The review of an update from `old` to `updated`. */
export function updating<T extends KubeObject>(old: T, updated: T): AdmissionReview<T>;
/** The review of the deletion of `object` (only its `oldObject`). */
export function deleting<T extends KubeObject>(object: T): AdmissionReview<T>;
/** What the component would answer for a notification, through the same glue as the built component (written into a delivery frame, without the old state if the plugin's `oldState` is false). */
export function dispatch(plugin: unknown, notification: Event | Update, type?: 'add' | 'update' | 'delete'): Promise<CallResult>;
/** The manifest record the component would return. */
export function manifestOf(plugin: unknown): ManifestRecord;
/** Whether `labels` match a Kubernetes label selector. */
export function selectorMatches(selector: string, labels: Record<string, string>): boolean;
/** One event of a replay and what came of it. */
export interface ReplayedEvent {
  line: number;
  type: 'add' | 'update' | 'delete';
  key: string;
  result: CallResult;
  logs: LogLine[];
}
/** Feeds recorded events (the `examples/events/*.jsonl` format) to a plugin through the fake host, like `herald plugin replay`. */
export function replay(plugin: unknown, text: string): Promise<ReplayedEvent[]>;

/** One metric update as it was handed to the host. */
export interface MetricUpdate {
  op: 'add' | 'set' | 'observe';
  name: string;
  labelValues: string[];
  value: number;
}
/** Declares the manifest's metrics and indexes: updates are checked as the host does, indexes served. */
export function declare(manifestOrPlugin: Manifest | unknown): void;
/** Every metric update since the last take, kept. */
export function metricUpdates(): MetricUpdate[];
/** Every metric update since the last take, removed. */
export function takeMetricUpdates(): MetricUpdate[];
/** The value of the counter or gauge series `name{labelValues}`, or `undefined`. */
export function metric(name: string, ...labelValues: string[]): number | undefined;
/** Every counter and gauge series: `[name, labelValues, value]`. */
export function metrics(): [string, string[], number][];
/** The observations of a histogram series, in order. */
export function observations(name: string, ...labelValues: string[]): number[];
/** Every requeue request since the last take, in milliseconds, kept. */
export function requeues(): number[];
/** Every requeue request since the last take, removed. */
export function takeRequeues(): number[];
/** What `deadline.remainingMs()` answers (1000 after `reset()`). */
export function setRemainingMs(milliseconds: number): void;

/** The clusters the plugin runs on (`['default']` after `reset`); the first is the call's until `setCluster`. */
export function setClusters(names: string[]): void;

/** Makes `name` the cluster of the calls that follow, ending any target the plugin set. */
export function setCluster(name: string): void;

/** One HTTP request (one hop) as the host received it. */
export interface RecordedRequest {
  method: string;
  url: string;
  /** Names in lowercase. */
  headers: Record<string, string>;
  body: string | undefined;
  json(): any;
}
/** A scripted failure, as the host reports it (the component's `fetch` rejects with a `TypeError` for each). */
export type HttpFailure = 'denied' | 'timeout' | 'connection' | 'protocol';
/** The fake host's side of `fetch`: scripted answers and recorded requests. */
export declare const http: {
  respond(pattern: string, answer: Response): void;
  respondOnce(pattern: string, answer: Response): void;
  fail(pattern: string, kind: HttpFailure): void;
  failOnce(pattern: string, kind: HttpFailure): void;
  grant(origin: string): void;
  denyUnscripted(): void;
  requests(): RecordedRequest[];
  takeRequests(): RecordedRequest[];
};
