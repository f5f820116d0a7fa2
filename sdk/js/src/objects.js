/**
 * Small helpers for Kubernetes objects as parsed JSON. Every helper accepts
 * a partial object and returns a sensible empty value for missing fields.
 *
 * @module
 */

/**
 * `metadata.name`, or `''`.
 *
 * @param {any} object
 * @returns {string}
 */
export function name(object) {
  return object?.metadata?.name ?? '';
}

/**
 * `metadata.namespace`, or `undefined` (cluster-scoped).
 *
 * @param {any} object
 * @returns {string | undefined}
 */
export function namespace(object) {
  return object?.metadata?.namespace ?? undefined;
}

/**
 * The object's key as the host writes it: `namespace/name`, or `name` when
 * cluster-scoped.
 *
 * @param {any} object
 * @returns {string}
 */
export function key(object) {
  const ns = namespace(object);
  return ns === undefined ? name(object) : `${ns}/${name(object)}`;
}

/**
 * `metadata.labels`, or `{}`.
 *
 * @param {any} object
 * @returns {Record<string, string>}
 */
export function labels(object) {
  return object?.metadata?.labels ?? {};
}

/**
 * `metadata.annotations`, or `{}`.
 *
 * @param {any} object
 * @returns {Record<string, string>}
 */
export function annotations(object) {
  return object?.metadata?.annotations ?? {};
}

/**
 * The owner reference with `controller: true`, or `undefined`.
 *
 * @param {any} object
 * @returns {{apiVersion: string, kind: string, name: string, uid: string, controller?: boolean} | undefined}
 */
export function controllerOf(object) {
  return (object?.metadata?.ownerReferences ?? []).find((reference) => reference?.controller === true);
}

/**
 * Keeps the first `max` characters of a longer `text` and marks the cut with
 * `…` and the original length: `truncate('abcdefgh', 4)` is
 * `'abcd…(8 chars)'`; shorter texts come back unchanged.
 *
 * @param {string} text
 * @param {number} max At least 1.
 * @returns {string}
 */
export function truncate(text, max) {
  if (!Number.isInteger(max) || max < 1) {
    throw new RangeError(`truncate: max must be a positive whole number, got ${String(max)}`);
  }
  const characters = [...text];
  return characters.length <= max ? text : `${characters.slice(0, max).join('')}…(${characters.length} chars)`;
}
