declare module 'herald:plugin/types@0.1.0' {
  /**
   * A Kubernetes group, version and kind, e.g. `apps`/`v1`/`Deployment`.
   * The core group is the empty string.
   */
  export interface GroupVersionKind {
    group: string,
    version: string,
    kind: string,
  }
  /**
   * How a plugin wants its notifications delivered.
   * # Variants
   * 
   * ## `"every-event"`
   * 
   * Every notification, one at a time, in the order the informer
   * distributed them (client-go's behaviour).
   * ## `"coalesced"`
   * 
   * At most one pending notification per object key, merged while it
   * waits: suits level-triggered plugins. The buffer is bounded by the
   * number of objects, not by the event rate.
   */
  export type DeliveryMode = 'every-event' | 'coalesced';
  /**
   * One watched resource: a kind plus an optional scope and selectors.
   */
  export interface Subscription {
    /**
     * The kind to watch; resolved through discovery (CRDs included).
     */
    kind: GroupVersionKind,
    /**
     * Only this namespace; `none` means every namespace (or a
     * cluster-scoped kind).
     */
    namespace?: string,
    /**
     * A Kubernetes label selector, e.g. `app=web,tier!=cache`.
     */
    labelSelector?: string,
    /**
     * A Kubernetes field selector, e.g. `metadata.name=web`.
     */
    fieldSelector?: string,
    /**
     * Resync period in milliseconds (at least 1000): every cached object
     * is re-delivered as `on-update(cached, cached)` with `is-resync`.
     * `none` means no resync.
     */
    resyncPeriodMs?: bigint,
    /**
     * How notifications for this subscription are queued.
     */
    delivery: DeliveryMode,
  }
  /**
   * Limits the plugin asks for; the operator's configuration caps them.
   */
  export interface Limits {
    /**
     * Deadline for one handler call, in milliseconds.
     */
    callDeadlineMs?: number,
    /**
     * Maximum linear memory of the instance, in bytes.
     */
    memoryBytes?: bigint,
  }
  /**
   * What a plugin is and what it needs. Returned by `manifest`, read once
   * when the plugin is loaded.
   */
  export interface Manifest {
    /**
     * Unique plugin name: lowercase letters, digits and `-`.
     */
    name: string,
    /**
     * The plugin's own version (free-form, semver advised).
     */
    version: string,
    /**
     * The resources the plugin watches; at least one.
     */
    subscriptions: Array<Subscription>,
    /**
     * Limits requested; `none` fields take the operator's defaults.
     */
    limits: Limits,
    /**
     * Host capabilities beyond logging and cache reads that the plugin
     * needs. Each must be granted by the operator or the plugin is not
     * loaded. Denied by default.
     */
    capabilities: Array<string>,
  }
  /**
   * Facts about the notification being delivered.
   */
  export interface EventContext {
    /**
     * The subscription's kind.
     */
    kind: GroupVersionKind,
    /**
     * The plural resource name the kind resolved to, e.g. `pods`.
     */
    resource: string,
    /**
     * The object's key: `namespace/name`, or `name` when cluster-scoped.
     */
    key: string,
    /**
     * The `metadata.resourceVersion` of the (new) object.
     */
    resourceVersion: string,
    /**
     * True for the synthetic adds that replay the cache to a listener
     * that joined (or re-joined) after the informer had synced.
     */
    isInitialList: boolean,
    /**
     * True for periodic resync updates (old and new are the same state).
     */
    isResync: boolean,
    /**
     * True on a delete the informer inferred from a relist: the object
     * vanished while the watch was down, and the state passed is the
     * last one the cache knew (client-go's DeletedFinalStateUnknown).
     */
    finalStateUnknown: boolean,
  }
}
