declare module 'herald:plugin/metrics@0.3.0' {
  /**
   * Adds `value` to a counter (at least 0) or a gauge (any sign).
   */
  export function add(name: string, labelValues: Array<string>, value: number): void;
  /**
   * Sets a gauge to `value`.
   */
  export function set(name: string, labelValues: Array<string>, value: number): void;
  /**
   * Records one observation in a histogram.
   */
  export function observe(name: string, labelValues: Array<string>, value: number): void;
}
