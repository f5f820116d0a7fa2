declare module 'herald:plugin/deadline@0.4.0' {
  /**
   * Milliseconds left before the deadline of the call under way (a
   * handler call, or `manifest`), rounded down; 0 once it has passed. A
   * plugin uses it to skip or shorten work that would not finish in time:
   * a second request, a large listing, one more item of a batch.
   */
  export function remainingMs(): bigint;
}
