/**
 * The plugin's own configuration, set by the operator (the `config` value of
 * its entry in the host configuration, or of its sidecar file).
 *
 * ```js
 * const { maxValueLength = 40 } = config.get() ?? {};
 * ```
 *
 * @module
 */

import { HeraldError } from './errors.js';
import { host } from './host.js';

/**
 * The configuration as JSON text, or `undefined` when the operator gave
 * none.
 *
 * @returns {string | undefined}
 */
export function raw() {
  return host().configGet() ?? undefined;
}

/**
 * The configuration, parsed, or `undefined` when the operator gave none.
 * Available in `manifest()` too. Throws a `HeraldError` if it is not JSON.
 *
 * @returns {any}
 */
export function get() {
  const json = raw();
  if (json === undefined) {
    return undefined;
  }
  try {
    return JSON.parse(json);
  } catch (error) {
    throw new HeraldError(`decoding the plugin configuration: ${error.message}`);
  }
}
