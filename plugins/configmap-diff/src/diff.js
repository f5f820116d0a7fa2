// @ts-check
/**
 * The diff of two ConfigMap states, rendered as one compact line. Pure
 * functions: no host calls, so they test without a fake host.
 *
 * @module
 */

import { objects } from '@herald/sdk';

/**
 * How a diff is rendered.
 *
 * @typedef {object} DiffOptions
 * @property {number} maxValueLength Longest value shown, in characters; longer ones are cut.
 * @property {number} maxEntries Most keys listed on one line; the rest are counted.
 */

/** @type {DiffOptions} */
export const DEFAULT_OPTIONS = Object.freeze({ maxValueLength: 40, maxEntries: 20 });

/**
 * One changed key.
 *
 * @typedef {object} Change
 * @property {'+' | '-' | '~'} sign `+` added, `-` removed, `~` changed.
 * @property {string} key The key in `data` or `binaryData`.
 * @property {boolean} binary Whether the key is in `binaryData`.
 * @property {string} [before] The old value (`data`) or base64 text (`binaryData`).
 * @property {string} [after] The new value.
 */

/**
 * The keys added, removed and changed between two maps, sorted by key.
 *
 * @param {Record<string, string> | undefined} before
 * @param {Record<string, string> | undefined} after
 * @param {boolean} binary
 * @returns {Change[]}
 */
function mapChanges(before = {}, after = {}, binary) {
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  /** @type {Change[]} */
  const changes = [];
  for (const key of keys) {
    const had = Object.hasOwn(before, key);
    const has = Object.hasOwn(after, key);
    if (had && !has) {
      changes.push({ sign: '-', key, binary, before: before[key] });
    } else if (!had && has) {
      changes.push({ sign: '+', key, binary, after: after[key] });
    } else if (before[key] !== after[key]) {
      changes.push({ sign: '~', key, binary, before: before[key], after: after[key] });
    }
  }
  return changes;
}

/**
 * Every change to `data` and `binaryData` from `old` to `current`: added
 * first, then changed, then removed; `data` before `binaryData` within each.
 *
 * @param {any} old
 * @param {any} current
 * @returns {Change[]}
 */
export function changes(old, current) {
  const all = [...mapChanges(old?.data, current?.data, false), ...mapChanges(old?.binaryData, current?.binaryData, true)];
  const order = { '+': 0, '~': 1, '-': 2 };
  return all.sort((a, b) => order[a.sign] - order[b.sign]);
}

/**
 * The decoded size of base64 text, in bytes.
 *
 * @param {string} base64
 * @returns {number}
 */
export function decodedSize(base64) {
  const clean = base64.replace(/\s/g, '');
  const padding = clean.endsWith('==') ? 2 : clean.endsWith('=') ? 1 : 0;
  return Math.floor((clean.length * 3) / 4) - padding;
}

/**
 * A value as shown: binary as its size, text JSON-quoted (so spaces and
 * newlines stay on one line) after cutting it to `maxValueLength`.
 *
 * @param {string} value
 * @param {boolean} binary
 * @param {DiffOptions} options
 * @returns {string}
 */
function show(value, binary, options) {
  return binary ? `<${decodedSize(value)} bytes>` : JSON.stringify(objects.truncate(value, options.maxValueLength));
}

/**
 * One change as a token: `+key="value"`, `~key="old"→"new"`, `-key`;
 * binary keys show sizes: `+cert.der=<1204 bytes>`.
 *
 * @param {Change} change
 * @param {DiffOptions} options
 * @returns {string}
 */
export function token(change, options = DEFAULT_OPTIONS) {
  const value = (/** @type {string | undefined} */ text) => show(text ?? '', change.binary, options);
  switch (change.sign) {
    case '+':
      return `+${change.key}=${value(change.after)}`;
    case '~':
      return `~${change.key}=${value(change.before)}→${value(change.after)}`;
    default:
      return `-${change.key}`;
  }
}

/**
 * The tokens of `list`, at most `maxEntries` of them, then `…N more`.
 *
 * @param {Change[]} list
 * @param {DiffOptions} options
 * @returns {string}
 */
export function render(list, options = DEFAULT_OPTIONS) {
  const shown = list.slice(0, options.maxEntries).map((change) => token(change, options));
  if (list.length > options.maxEntries) {
    shown.push(`…${list.length - options.maxEntries} more`);
  }
  return shown.join(' ');
}

/**
 * The number of keys in `data` and `binaryData`, as `keys=3` or
 * `keys=3 binary=1`.
 *
 * @param {any} configMap
 * @returns {string}
 */
export function keyCount(configMap) {
  const text = Object.keys(configMap?.data ?? {}).length;
  const binary = Object.keys(configMap?.binaryData ?? {}).length;
  return binary === 0 ? `keys=${text}` : `keys=${text} binary=${binary}`;
}
