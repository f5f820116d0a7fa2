declare module 'herald:plugin/index@0.3.0' {
  /**
   * The cached objects that the manifest's index `name` files under
   * `value`, only those in `namespace` if given, as JSON texts sorted by
   * key (`namespace/name`). Within the plugin's subscriptions to the kind,
   * as `cache.list` is.
   */
  export function lookup(name: string, value: string, namespace: string | undefined): Array<string>;
  /**
   * Why an index look-up could not be answered.
   */
  export type IndexError = IndexErrorUnknownIndex;
  /**
   * The manifest declares no index of this name.
   */
  export interface IndexErrorUnknownIndex {
    tag: 'unknown-index',
    val: string,
  }
}
