/// <reference path="./herald-plugin-types.d.ts" />
declare module 'herald:plugin/admission@0.5.0' {
  /**
   * What the plugin admits. Called once when it is loaded, after
   * `manifest`; its configuration is readable.
   */
  export function declare(): Webhooks;
  /**
   * Decides on a write its validating webhook covers. An `err` is a
   * fault: answered by the failure policy.
   */
  export function validate(review: Review): Verdict;
  /**
   * Decides on, and may change, a write its mutating webhook covers.
   */
  export function mutate(review: Review): Mutation;
  export type GroupVersionKind = import('herald:plugin/types@0.2.0').GroupVersionKind;
  /**
   * The operation a review is about.
   * # Variants
   * 
   * ## `"create"`
   * 
   * ## `"update"`
   * 
   * ## `"delete"`
   * 
   * ## `"connect"`
   * 
   * `exec`, `attach`, `portforward` and other connect subresources.
   */
  export type Operation = 'create' | 'update' | 'delete' | 'connect';
  /**
   * What the API server does when the plugin cannot decide (a fault, a
   * timeout, the plugin gone): refuse the write or let it through.
   * # Variants
   * 
   * ## `"fail"`
   * 
   * ## `"ignore"`
   */
  export type FailurePolicy = 'fail' | 'ignore';
  /**
   * One kind of write the plugin admits.
   */
  export interface Rule {
    /**
     * The kind; resolved to its resource through discovery (CRDs
     * included).
     */
    kind: GroupVersionKind,
    /**
     * The operations; at least one.
     */
    operations: Array<Operation>,
    /**
     * `none` for the object itself, `some("status")` (or another
     * subresource) for that subresource only.
     */
    subresource?: string,
  }
  /**
   * One webhook: the writes the API server sends the plugin for one
   * decision (validate or mutate).
   */
  export interface Webhook {
    /**
     * What it admits; at least one rule.
     */
    rules: Array<Rule>,
    /**
     * Only objects in namespaces whose labels match this selector
     * (Kubernetes label-selector syntax); `none`: every namespace but
     * the ones the operator leaves out (Herald's own and `kube-system`
     * by default).
     */
    namespaceSelector?: string,
    /**
     * Only objects whose labels match this selector; `none`: all.
     */
    objectSelector?: string,
    /**
     * What the API server does when the plugin cannot answer.
     */
    failurePolicy: FailurePolicy,
    /**
     * How long the API server waits for the answer, 1 to 30 seconds;
     * `none`: 10, Kubernetes' default.
     */
    timeoutSeconds?: number,
  }
  /**
   * What the plugin admits: `none` for a decision it does not make.
   */
  export interface Webhooks {
    /**
     * Writes `validate` decides on (a validating webhook).
     */
    validating?: Webhook,
    /**
     * Writes `mutate` may change (a mutating webhook).
     */
    mutating?: Webhook,
  }
  /**
   * Who asked for the write (`userInfo` of the review).
   */
  export interface UserInfo {
    username: string,
    uid: string,
    groups: Array<string>,
    /**
     * Extra attributes from the authenticator, name and values.
     */
    extra: Array<[string, Array<string>]>,
  }
  /**
   * One write, as the API server describes it in an AdmissionReview.
   */
  export interface Review {
    /**
     * The review's identifier (echoed in the answer by the host).
     */
    uid: string,
    /**
     * The kind of the object, in the version the plugin declared.
     */
    kind: GroupVersionKind,
    /**
     * The resource, plural (`pods`).
     */
    resource: string,
    /**
     * The subresource written; empty for the object itself.
     */
    subresource: string,
    /**
     * The object's name; empty on a create whose name the server
     * generates.
     */
    name: string,
    /**
     * The object's namespace; empty for cluster-scoped kinds.
     */
    namespace: string,
    /**
     * What is being done.
     */
    operation: Operation,
    /**
     * Who is doing it.
     */
    userInfo: UserInfo,
    /**
     * The object as it would be stored, as JSON; `none` on a delete.
     */
    object?: string,
    /**
     * The object as it is stored, as JSON; `none` on a create.
     */
    oldObject?: string,
    /**
     * True when the write will not persist (`dryRun`).
     */
    dryRun: boolean,
    /**
     * The operation's options (CreateOptions, UpdateOptions,
     * DeleteOptions) as JSON; `none` when absent.
     */
    options?: string,
  }
  /**
   * A decision.
   */
  export interface Verdict {
    /**
     * Whether the write may go ahead.
     */
    allowed: boolean,
    /**
     * The HTTP status code of a refusal (400 to 599); `none`: 403.
     */
    code?: number,
    /**
     * Why it was refused, for the user; ignored when allowed.
     */
    message: string,
    /**
     * Warnings the user's client prints, allowed or not.
     */
    warnings: Array<string>,
  }
  /**
   * The change a mutating plugin makes to the object.
   */
  export type Change = ChangeNone | ChangeJsonPatch | ChangeObject;
  /**
   * No change.
   */
  export interface ChangeNone {
    tag: 'none',
  }
  /**
   * A JSON Patch (RFC 6902) against the review's object.
   */
  export interface ChangeJsonPatch {
    tag: 'json-patch',
    val: string,
  }
  /**
   * The whole changed object as JSON; the host computes the patch.
   */
  export interface ChangeObject {
    tag: 'object',
    val: string,
  }
  /**
   * What `mutate` answers: its decision and its change (ignored when
   * the write is refused).
   */
  export interface Mutation {
    verdict: Verdict,
    change: Change,
  }
}
