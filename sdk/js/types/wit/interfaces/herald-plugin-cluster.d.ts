declare module 'herald:plugin/cluster@0.6.0' {
  /**
   * The name of the cluster of the call under way: the notification's
   * (a DNS label, e.g. `west`); for the default cluster, its configured
   * name (`default` unless the operator names it). Outside a handler call
   * (`manifest`, admission), the default cluster's.
   */
  export function current(): string;
  /**
   * The clusters this plugin is delivered notifications from, sorted by
   * name: where the operator runs it (`plugins.<name>.clusters`).
   */
  export function names(): Array<string>;
  /**
   * Makes `name` the target of this call's later look-ups, requests and
   * Events, until the call ends or `target` is called again; `none` goes
   * back to the call's own cluster. Refused (and nothing changes) for a
   * cluster this plugin is not delivered notifications from: the error
   * says which. The target never outlives the call.
   */
  export function target(name: string | undefined): void;
}
