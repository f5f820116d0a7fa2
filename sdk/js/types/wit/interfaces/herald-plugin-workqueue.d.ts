declare module 'herald:plugin/workqueue@0.3.0' {
  /**
   * Asks for the object of the call under way to be delivered again
   * after `delay-ms` milliseconds (a level-triggered re-check), once the
   * call returns `ok`. A newer change to the object delivered before
   * then takes its place. The last request of a call wins. Honoured for
   * `coalesced` subscriptions; ignored, with a warning, for
   * `every-event` ones, whose order a later re-delivery would break.
   */
  export function requeueAfter(delayMs: bigint): void;
}
