/**
 * The {@link Handler} base class a plugin extends.
 *
 * @module
 */

import { doesNotAdmit } from './admission.js';

/**
 * A Herald plugin: a manifest plus what to do with each notification, and
 * with each write it admits (see `Manifest.validating` and
 * `Manifest.mutating`).
 *
 * Extend it and default-export the class from the plugin's entry module:
 *
 * ```js
 * export default class Hello extends Handler {
 *   manifest() {
 *     return new Manifest('hello', '0.1.0').subscribe(Subscription.to('', 'v1', 'Pod'));
 *   }
 *   onAdd(event) {
 *     log.info(`hello pod=${event.key}`);
 *   }
 * }
 * ```
 *
 * The SDK creates one instance (with no constructor arguments) before the
 * first call and keeps it for the life of the component instance, so fields
 * carry state from one call to the next (the host discards the instance, and
 * the state, when it reloads the plugin or after a trap). Calls never
 * overlap. Every handler defaults to doing nothing; throwing is a handler
 * failure the host records (the thrown error's message) and retries with
 * backoff a bounded number of times. Handlers may be `async`. `validate` and
 * `mutate` are called only for the webhooks the manifest declares; a throw
 * there is a fault the host answers by the webhook's failure policy (no
 * retry).
 *
 * Two static properties say how the host delivers notifications (world
 * 0.7.0's delivery options); they are read when the component is built:
 *
 * ```js
 * export default class Hello extends Handler {
 *   static oldState = false; // onUpdate never reads update.old
 *   static maxBatch = 16;    // up to 16 notifications per call
 *   // ...
 * }
 * ```
 *
 * A plain-object plugin sets `oldState` and `maxBatch` as properties.
 */
export class Handler {
  /**
   * Whether an update carries the old state beside the new one
   * (`update.old`, `update.oldJson`). A plugin that never reads it sets
   * `static oldState = false`: the host then does not copy it into the
   * plugin at all, `update.oldJson` is `''` and `update.old` throws.
   *
   * @type {boolean}
   */
  static oldState = true;

  /**
   * The most notifications the host may hand over in one call, at least 1
   * (a whole number). Each still reaches `onAdd`, `onUpdate` or `onDelete`
   * on its own, in order, each awaited before the next. More than 1 opts
   * into batches of every-event notifications (coalesced ones come one per
   * call): fewer calls, one call deadline covering the batch, and a
   * failure stopping the batch there, the host retrying from the
   * notification that failed. A trap (memory exhausted, say) loses the
   * instance: the host delivers that batch again one notification at a
   * time, so those handled before the trap come twice.
   *
   * @type {number}
   */
  static maxBatch = 1;

  /**
   * Describes the plugin: called once per load, before any handler call.
   * `config.get()` already works here, so configuration may shape the
   * subscriptions. Must be overridden.
   *
   * @returns {import('./manifest.js').Manifest}
   */
  manifest() {
    throw new Error(`${this.constructor.name} must define manifest()`);
  }

  /**
   * An object was first seen, or replayed to a plugin joining an informer
   * that had already synced (`event.isInitialList`).
   *
   * @param {import('./event.js').Event} event
   * @returns {void | Promise<void>}
   */
  // eslint-disable-next-line no-unused-vars
  onAdd(event) {}

  /**
   * An object changed; on a periodic resync (`update.isResync`) old and new
   * are the same state.
   *
   * @param {import('./event.js').Update} update
   * @returns {void | Promise<void>}
   */
  // eslint-disable-next-line no-unused-vars
  onUpdate(update) {}

  /**
   * An object was deleted; the event carries its last known state
   * (`event.finalStateUnknown` when the deletion was inferred).
   *
   * @param {import('./event.js').Event} event
   * @returns {void | Promise<void>}
   */
  // eslint-disable-next-line no-unused-vars
  onDelete(event) {}

  /**
   * Decides on a write the manifest's validating webhook covers: return
   * `Verdict.allow()` or `Verdict.deny(message)`. Undefined, it throws: the
   * plugin does not admit.
   *
   * @param {import('./admission.js').AdmissionReview} review
   * @returns {import('./admission.js').Verdict | Promise<import('./admission.js').Verdict>}
   */
  // eslint-disable-next-line no-unused-vars
  validate(review) {
    throw doesNotAdmit(this.constructor.name, 'validate');
  }

  /**
   * Decides on, and may change, a write the manifest's mutating webhook
   * covers: return a `Mutation`. Undefined, it throws: the plugin does not
   * admit.
   *
   * @param {import('./admission.js').AdmissionReview} review
   * @returns {import('./admission.js').Mutation | Promise<import('./admission.js').Mutation>}
   */
  // eslint-disable-next-line no-unused-vars
  mutate(review) {
    throw doesNotAdmit(this.constructor.name, 'mutate');
  }
}
