/// <reference path="./herald-plugin-types.d.ts" />
declare module 'herald:plugin/cache@0.2.0' {
  /**
   * The cached object `namespace/name` (namespace `none` for
   * cluster-scoped kinds) as JSON text, or `none` if it is not cached.
   */
  export function get(kind: GroupVersionKind, namespace: string | undefined, name: string): string | undefined;
  /**
   * Every cached object of `kind`, optionally only in `namespace` and only
   * those matching `label-selector`, as JSON texts.
   */
  export function list(kind: GroupVersionKind, namespace: string | undefined, labelSelector: string | undefined): Array<string>;
  export type GroupVersionKind = import('herald:plugin/types@0.2.0').GroupVersionKind;
  /**
   * Why a look-up could not be answered.
   */
  export type CacheError = CacheErrorNotSubscribed | CacheErrorInvalidSelector;
  /**
   * The plugin did not subscribe to this kind.
   */
  export interface CacheErrorNotSubscribed {
    tag: 'not-subscribed',
    val: GroupVersionKind,
  }
  /**
   * The label selector did not parse; the string says why.
   */
  export interface CacheErrorInvalidSelector {
    tag: 'invalid-selector',
    val: string,
  }
}
