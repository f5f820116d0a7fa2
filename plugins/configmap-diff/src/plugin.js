// @ts-check
/**
 * configmap-diff: logs a compact diff of every ConfigMap change.
 *
 * - created:   `created configmap=shop/web keys=2`
 * - changed:   `changed configmap=shop/web +NEW="on" ~LEVEL="info"→"debug" -OLD`
 *              (values cut to `maxValueLength`, binaryData shown as sizes)
 * - deleted:   `deleted configmap=shop/web keys=2` (`final-state-unknown` added
 *              when the deletion was inferred from a relist)
 *
 * Nothing is logged on resync, nor for updates that leave `data` and
 * `binaryData` alone (label or annotation edits). The initial list is logged
 * at debug level only.
 *
 * Configuration (all optional): `{"namespace": "shop", "maxValueLength": 40,
 * "maxEntries": 20, "recordEvents": false}`.
 *
 * With `recordEvents: true` each logged change is also recorded as a
 * Kubernetes Normal Event on the ConfigMap (reason `DataChanged`, the diff
 * as the note), so `kubectl describe configmap` shows recent changes. The
 * manifest then asks for the `events` capability, which the operator must
 * grant; without the option it asks for nothing.
 */

import { EVENTS, Handler, HeraldError, KubeError, Manifest, Subscription, config, events, kinds, log } from '@herald/sdk';
import { DEFAULT_OPTIONS, changes, keyCount, render } from './diff.js';

/**
 * The plugin's configuration with defaults filled in.
 *
 * @returns {{namespace: string | undefined, recordEvents: boolean} & import('./diff.js').DiffOptions}
 */
export function settings() {
  const given = config.get() ?? {};
  if (typeof given !== 'object' || Array.isArray(given)) {
    throw new HeraldError('the configuration must be an object');
  }
  const positive = (/** @type {string} */ name, /** @type {number} */ fallback) => {
    const value = given[name] ?? fallback;
    if (!Number.isInteger(value) || value < 1) {
      throw new HeraldError(`configuration ${name} must be a positive whole number, got ${JSON.stringify(value)}`);
    }
    return value;
  };
  if (given.namespace !== undefined && typeof given.namespace !== 'string') {
    throw new HeraldError('configuration namespace must be a string');
  }
  if (given.recordEvents !== undefined && typeof given.recordEvents !== 'boolean') {
    throw new HeraldError('configuration recordEvents must be true or false');
  }
  return {
    namespace: given.namespace,
    recordEvents: given.recordEvents ?? false,
    maxValueLength: positive('maxValueLength', DEFAULT_OPTIONS.maxValueLength),
    maxEntries: positive('maxEntries', DEFAULT_OPTIONS.maxEntries),
  };
}

/** The reason of the Events recorded with `recordEvents`. */
export const EVENT_REASON = 'DataChanged';

/** Logs what changed in each ConfigMap. */
export default class ConfigMapDiff extends Handler {
  /** Read once, on first use: the configuration does not change during an instance's life. */
  #settings = settings();

  manifest() {
    const configMaps = Subscription.to(kinds.ConfigMap);
    if (this.#settings.namespace !== undefined) {
      configMaps.namespace(this.#settings.namespace);
    }
    const manifest = new Manifest('configmap-diff', '0.1.0').subscribe(configMaps);
    return this.#settings.recordEvents ? manifest.capability(EVENTS) : manifest;
  }

  /** @param {import('@herald/sdk').Event} event */
  onAdd(event) {
    if (event.isInitialList) {
      log.debug(`listed configmap=${event.key} ${keyCount(event.object)}`);
    } else {
      log.info(`created configmap=${event.key} ${keyCount(event.object)}`);
    }
  }

  /** @param {import('@herald/sdk').Update} update */
  onUpdate(update) {
    if (update.isResync) {
      return;
    }
    const found = changes(update.old, update.new);
    if (found.length > 0) {
      const diff = render(found, this.#settings);
      log.info(`changed configmap=${update.key} ${diff}`);
      if (this.#settings.recordEvents) {
        this.#record(update, diff);
      }
    }
  }

  /**
   * Records the diff as a Normal Event on the ConfigMap. A refusal
   * (throttled, API server unavailable, ...) is logged, not thrown: the diff
   * is in the log already, and failing the call would make the host retry
   * the notification for the sake of an Event.
   *
   * @param {import('@herald/sdk').Update} update
   * @param {string} diff
   */
  #record(update, diff) {
    try {
      events.normal(update.new, EVENT_REASON, `data changed: ${diff}`, { kind: update.kind });
    } catch (error) {
      if (!(error instanceof KubeError)) {
        throw error;
      }
      log.error(`could not record the event configmap=${update.key} error=${error.message}`);
    }
  }

  /** @param {import('@herald/sdk').Event} event */
  onDelete(event) {
    const inferred = event.finalStateUnknown ? ' final-state-unknown' : '';
    log.info(`deleted configmap=${event.key} ${keyCount(event.object)}${inferred}`);
  }
}
