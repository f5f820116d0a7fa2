/// <reference path="./herald-plugin-types.d.ts" />
declare module 'herald:plugin/kube@0.2.0' {
  /**
   * Reads an object from the API server (not the cache): the object as
   * JSON text. Verb `get`.
   */
  export function get(target: Target): string;
  /**
   * Creates `object` (JSON text) of `kind` in `namespace`: the object as
   * stored. Verb `create`.
   */
  export function create(kind: GroupVersionKind, namespace: string | undefined, object: string): string;
  /**
   * Replaces the object (or its status) with `object`; a
   * `metadata.resourceVersion` in it makes the replace conditional. Verb
   * `update`.
   */
  export function replace(target: Target, object: string): string;
  /**
   * Patches the object (or its status) with `patch` of `patch-type`. Verb
   * `patch`.
   */
  export function patch(target: Target, patchType: PatchType, patch: string): string;
  /**
   * Server-side applies `object` (or its status) with the field manager
   * `herald.<plugin-name>`; `force` takes over fields other managers own
   * instead of failing with a conflict. Verb `apply`.
   */
  export function apply(target: Target, object: string, force: boolean): string;
  /**
   * Deletes the object. Verb `delete`.
   */
  export { _delete as delete };
  function _delete(target: Target, options: DeleteOptions): void;
  export type GroupVersionKind = import('herald:plugin/types@0.2.0').GroupVersionKind;
  /**
   * The object (or subresource) a call is about.
   */
  export interface Target {
    /**
     * Its kind; resolved through discovery (CRDs included).
     */
    kind: GroupVersionKind,
    /**
     * Its namespace; `none` for cluster-scoped kinds.
     */
    namespace?: string,
    /**
     * Its name.
     */
    name: string,
    /**
     * `none` for the object itself, `some("status")` for its status.
     */
    subresource?: string,
  }
  /**
   * How `patch` reads its patch document.
   * # Variants
   * 
   * ## `"merge"`
   * 
   * JSON merge patch (RFC 7386).
   * ## `"json"`
   * 
   * JSON patch (RFC 6902): a list of operations.
   * ## `"strategic"`
   * 
   * Kubernetes' strategic merge patch (built-in kinds only).
   */
  export type PatchType = 'merge' | 'json' | 'strategic';
  /**
   * How a delete treats the object's dependents.
   * # Variants
   * 
   * ## `"orphan"`
   * 
   * Leave dependents in place.
   * ## `"background"`
   * 
   * Delete the object now, its dependents in the background.
   * ## `"foreground"`
   * 
   * Delete dependents first, then the object.
   */
  export type Propagation = 'orphan' | 'background' | 'foreground';
  /**
   * Options of a delete.
   */
  export interface DeleteOptions {
    /**
     * Delete only if the object still has this UID.
     */
    uid?: string,
    /**
     * Delete only if the object is still at this resourceVersion.
     */
    resourceVersion?: string,
    /**
     * Dependents' fate; `none` takes the kind's default.
     */
    propagation?: Propagation,
  }
  /**
   * One reason the API server gave for refusing an object as invalid.
   */
  export interface Cause {
    /**
     * Machine-readable reason, e.g. `FieldValueRequired`.
     */
    reason: string,
    /**
     * Human-readable message.
     */
    message: string,
    /**
     * The field at fault, e.g. `spec.containers[0].image`.
     */
    field: string,
  }
  /**
   * A refusal with the API server's own words.
   */
  export interface ApiStatus {
    /**
     * HTTP status code.
     */
    code: number,
    /**
     * The Status `reason` (e.g. `Conflict`), possibly empty.
     */
    reason: string,
    /**
     * The Status `message`.
     */
    message: string,
  }
  /**
   * The details of an `invalid` refusal.
   */
  export interface InvalidError {
    /**
     * The server's message.
     */
    message: string,
    /**
     * The fields at fault.
     */
    causes: Array<Cause>,
  }
  /**
   * The details of a `too-many-requests` refusal.
   */
  export interface Throttled {
    /**
     * What refused the call: the host's rate limit or the server.
     */
    message: string,
    /**
     * How long to wait before retrying, when known.
     */
    retryAfterMs?: bigint,
  }
  /**
   * Why a call failed. A handler can act on each: retry a conflict with
   * a fresh read, create what was not found, back off when throttled.
   */
  export type KubeError = KubeErrorNotGranted | KubeErrorNotFound | KubeErrorAlreadyExists | KubeErrorConflict | KubeErrorInvalid | KubeErrorForbidden | KubeErrorTooManyRequests | KubeErrorTimeout | KubeErrorUnavailable | KubeErrorFailed;
  /**
   * The call is outside the plugin's write rules or grants; no request
   * was sent. The text names the rule that is missing.
   */
  export interface KubeErrorNotGranted {
    tag: 'not-granted',
    val: string,
  }
  /**
   * 404: the object (or its namespace or kind) does not exist.
   */
  export interface KubeErrorNotFound {
    tag: 'not-found',
    val: string,
  }
  /**
   * 409 AlreadyExists: create of an object that exists.
   */
  export interface KubeErrorAlreadyExists {
    tag: 'already-exists',
    val: string,
  }
  /**
   * 409 Conflict: a stale resourceVersion, a failed precondition, or a
   * server-side apply conflict with another field manager.
   */
  export interface KubeErrorConflict {
    tag: 'conflict',
    val: string,
  }
  /**
   * 422 Invalid: the object was refused; the server's causes.
   */
  export interface KubeErrorInvalid {
    tag: 'invalid',
    val: InvalidError,
  }
  /**
   * 403: the host's service account may not do this.
   */
  export interface KubeErrorForbidden {
    tag: 'forbidden',
    val: string,
  }
  /**
   * 429 from the server, or the plugin's own rate limit could not admit
   * the call before its deadline. `retry-after-ms` when known.
   */
  export interface KubeErrorTooManyRequests {
    tag: 'too-many-requests',
    val: Throttled,
  }
  /**
   * The call did not finish within the handler call's deadline, or the
   * server answered 504.
   */
  export interface KubeErrorTimeout {
    tag: 'timeout',
    val: string,
  }
  /**
   * The server could not be reached, or answered 5xx.
   */
  export interface KubeErrorUnavailable {
    tag: 'unavailable',
    val: string,
  }
  /**
   * Any other refusal (400, 405, 415, …), with the server's status.
   */
  export interface KubeErrorFailed {
    tag: 'failed',
    val: ApiStatus,
  }
}
