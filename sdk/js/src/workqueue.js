/**
 * The plugin's work queue, with client-go's semantics: ask for the object
 * being handled to be delivered again later, for a level-triggered re-check.
 *
 * ```js
 * onAdd(event) {
 *   workqueue.requeueAfter(600_000); // nothing may change before then: look again
 * }
 * ```
 *
 * With coalesced delivery (`Subscription.coalesced()`) a failed call does not
 * hold up other objects: the host retries that object alone, with a delay
 * doubling from 5 ms to 1,000 s per consecutive failure. With every-event
 * delivery failures are retried in order, blocking the subscription.
 *
 * @module
 */

import { host } from './host.js';

const U64_MAX = (1n << 64n) - 1n;

/**
 * Asks for the object of the call under way to be delivered again after
 * `delayMs` milliseconds (as `setTimeout` counts; saturating), once the call returns without
 * throwing. The last request of a call wins; a newer change to the object
 * takes its place; a call that throws is retried with the host's backoff
 * instead. Honoured for coalesced subscriptions only (the host ignores it,
 * with a warning, for every-event ones). The re-delivery is an update whose
 * old and new states are the cached object.
 *
 * @param {number | bigint} delayMs
 */
export function requeueAfter(delayMs) {
  let delay;
  if (typeof delayMs === 'bigint') {
    delay = delayMs;
  } else if (typeof delayMs === 'number' && Number.isFinite(delayMs)) {
    delay = BigInt(Math.floor(delayMs));
  } else {
    throw new TypeError(`requeueAfter takes milliseconds, got ${String(delayMs)}`);
  }
  if (delay < 0n) {
    throw new RangeError(`requeueAfter: the delay must not be negative, got ${String(delayMs)}`);
  }
  host().requeueAfter(delay > U64_MAX ? U64_MAX : delay);
}
