declare module 'herald:plugin/config@0.2.0' {
  /**
   * The configuration the operator gave this plugin (the `config` value of
   * its entry in the host configuration or its sidecar file) as JSON text,
   * or `none` when there is none.
   */
  export function get(): string | undefined;
}
