declare module 'herald:plugin/delivery@0.7.0' {
  /**
   * The plugin's options.
   */
  export function options(): DeliveryOptions;
  /**
   * Handles the notifications of `frame`, in order.
   */
  export function deliver(frame: Uint8Array): void;
  /**
   * What the plugin asks of its deliveries; called once per instance,
   * before the first `deliver`.
   */
  export interface DeliveryOptions {
    /**
     * Whether an update carries the old state beside the new one
     * (flag 8). A plugin that never reads it saves its copy.
     */
    oldState: boolean,
    /**
     * The most notifications one call may carry, at least 1. A
     * plugin answering more than 1 takes batches: the host fills a
     * call with the notifications waiting for it (never waiting for
     * more to arrive), and one call's deadline covers the batch.
     */
    maxBatch: number,
  }
  /**
   * Why a frame was not handled in full.
   */
  export interface Failure {
    /**
     * The index in the frame of the notification that failed: every
     * one before it was handled, it and every one after it were not
     * (the host retries them, as it retries a failed 0.2.0 call).
     */
    index: number,
    /**
     * What went wrong, as the plugin says it.
     */
    message: string,
  }
}
