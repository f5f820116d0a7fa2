declare module 'herald:plugin/types@0.2.0' {
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
   * A Kubernetes API verb a plugin may use through the `kube` interface.
   * # Variants
   * 
   * ## `"get"`
   * 
   * Read one object from the API server (`kube.get`).
   * ## `"create"`
   * 
   * Create an object (`kube.create`).
   * ## `"update"`
   * 
   * Replace an object (`kube.replace`); Kubernetes calls it update.
   * ## `"patch"`
   * 
   * Patch an object: merge, JSON or strategic merge patch (`kube.patch`).
   * ## `"apply"`
   * 
   * Server-side apply (`kube.apply`): on the wire a patch that may
   * create, so Kubernetes RBAC needs both `patch` and `create` for it.
   * ## `"delete"`
   * 
   * Delete an object (`kube.delete`).
   */
  export type Verb = 'get' | 'create' | 'update' | 'patch' | 'apply' | 'delete';
  /**
   * Writes a plugin will make: verbs on one kind, in some namespaces.
   * Declared in the manifest; the operator must grant at least as much.
   */
  export interface WriteRule {
    /**
     * The verbs it will use.
     */
    verbs: Array<Verb>,
    /**
     * The kind's API group; the core group is the empty string.
     */
    group: string,
    /**
     * The kind, e.g. `NetworkPolicy`.
     */
    kind: string,
    /**
     * `none` for the object itself, `some("status")` for its status
     * subresource (a separate grant, as in Kubernetes RBAC).
     */
    subresource?: string,
    /**
     * The namespaces it will write in; `*` means every namespace and
     * cluster-scoped objects. At least one.
     */
    namespaces: Array<string>,
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
     * needs (e.g. `events`). Each must be granted by the operator or the
     * plugin is not loaded. Denied by default.
     */
    capabilities: Array<string>,
    /**
     * The Kubernetes writes (and API reads) the plugin will make through
     * `kube`. Each must be covered by the operator's grant or the plugin
     * is not loaded; every call is checked against them. Empty: none.
     */
    writes: Array<WriteRule>,
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
