/**
 * The deadline of the call under way (the `deadline` interface of world
 * 0.4.0). The host ends a call that passes its deadline (the instance is
 * rebuilt and the notification retried), and gives each Kubernetes or HTTP
 * request at most 80 % of what is left. A plugin reads it to skip or shorten
 * work that would not finish in time:
 *
 * ```js
 * for (const item of batch) {
 *   if (deadline.remainingMs() < 100) {
 *     workqueue.requeueAfter(1); // finish in the next call
 *     break;
 *   }
 *   handle(item);
 * }
 * ```
 *
 * @module
 */

import { host } from './host.js';

/**
 * Milliseconds left before the deadline of the call under way (a handler
 * call, or `manifest`), rounded down; 0 once it has passed. In tests,
 * `testing.setRemainingMs` sets it.
 *
 * @returns {number}
 */
export function remainingMs() {
  return Number(host().remainingMs());
}
