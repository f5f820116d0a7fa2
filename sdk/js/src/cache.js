/**
 * Read-only look-ups in the host's shared cache (a lister). Only kinds the
 * plugin subscribed to are visible, and only within each subscription's
 * namespace and selectors.
 *
 * ```js
 * const replicaSets = cache.list(REPLICA_SET, 'shop', 'app=web');
 * const one = cache.get(REPLICA_SET, 'shop', 'web-5d8f7'); // undefined if not cached
 * ```
 *
 * @module
 */

import { HeraldError } from './errors.js';
import { host } from './host.js';
import { GroupVersionKind } from './kind.js';

/**
 * Why a cache look-up failed. `reason` says which way:
 * - `'not-subscribed'`: the plugin did not subscribe to `kind`;
 * - `'invalid-selector'`: the label selector did not parse (`detail` says why);
 * - `'decode'`: a cached object was not JSON (`detail` says why).
 */
export class CacheError extends HeraldError {
  /**
   * @param {'not-subscribed' | 'invalid-selector' | 'decode'} reason
   * @param {GroupVersionKind} kind The kind looked up.
   * @param {string} [detail] The selector parser's or decoder's complaint.
   */
  constructor(reason, kind, detail) {
    const message = {
      'not-subscribed': () => `not subscribed to ${kind}`,
      'invalid-selector': () => `invalid label selector: ${detail}`,
      decode: () => `decoding a cached ${kind}: ${detail}`,
    }[reason];
    if (message === undefined) {
      throw new TypeError(`unknown cache error reason ${String(reason)}`);
    }
    super(message());
    this.name = 'CacheError';
    /** Which way the look-up failed. */
    this.reason = reason;
    /** The kind looked up. */
    this.kind = kind;
    /** The selector parser's or decoder's complaint, if any. */
    this.detail = detail;
  }
}

/** Turns what the host import threw (`{payload: {tag, val}}`) into a CacheError. */
function fromHost(thrown, kind) {
  const payload = thrown?.payload;
  if (payload?.tag === 'not-subscribed') {
    return new CacheError('not-subscribed', GroupVersionKind.from(payload.val));
  }
  if (payload?.tag === 'invalid-selector') {
    return new CacheError('invalid-selector', kind, String(payload.val));
  }
  return thrown;
}

function optionalString(value, what) {
  if (value === undefined || value === null) {
    return undefined;
  }
  if (typeof value !== 'string') {
    throw new TypeError(`${what} must be a string, undefined or null, got ${typeof value}`);
  }
  return value;
}

function decode(kind, json) {
  try {
    return JSON.parse(json);
  } catch (error) {
    throw new CacheError('decode', kind, error.message);
  }
}

/**
 * The cached object `namespace/name` of `kind` as JSON text, or `undefined`
 * if it is not cached.
 *
 * @param {GroupVersionKind | {group: string, version: string, kind: string}} kind
 * @param {string | undefined | null} namespace `undefined` (or `null`) for a cluster-scoped kind.
 * @param {string} name
 * @returns {string | undefined}
 * @throws {CacheError}
 */
export function getJson(kind, namespace, name) {
  const gvk = GroupVersionKind.from(kind);
  if (typeof name !== 'string') {
    throw new TypeError(`name must be a string, got ${typeof name}`);
  }
  try {
    return host().cacheGet(gvk.toRecord(), optionalString(namespace, 'namespace'), name) ?? undefined;
  } catch (thrown) {
    throw fromHost(thrown, gvk);
  }
}

/**
 * Every cached object of `kind` (only in `namespace` if given, and only those
 * matching `labelSelector` if given) as JSON texts.
 *
 * @param {GroupVersionKind | {group: string, version: string, kind: string}} kind
 * @param {string} [namespace]
 * @param {string} [labelSelector] e.g. `app=web,tier!=cache`.
 * @returns {string[]}
 * @throws {CacheError}
 */
export function listJson(kind, namespace, labelSelector) {
  const gvk = GroupVersionKind.from(kind);
  try {
    return host().cacheList(
      gvk.toRecord(),
      optionalString(namespace, 'namespace'),
      optionalString(labelSelector, 'label selector'),
    );
  } catch (thrown) {
    throw fromHost(thrown, gvk);
  }
}

/**
 * The cached object `namespace/name` of `kind`, parsed, or `undefined` if it
 * is not cached.
 *
 * @param {GroupVersionKind | {group: string, version: string, kind: string}} kind
 * @param {string | undefined | null} namespace `undefined` (or `null`) for a cluster-scoped kind.
 * @param {string} name
 * @returns {any}
 * @throws {CacheError}
 */
export function get(kind, namespace, name) {
  const json = getJson(kind, namespace, name);
  return json === undefined ? undefined : decode(GroupVersionKind.from(kind), json);
}

/**
 * Every cached object of `kind`, parsed; only in `namespace` if given, only
 * those matching `labelSelector` if given.
 *
 * @param {GroupVersionKind | {group: string, version: string, kind: string}} kind
 * @param {string} [namespace]
 * @param {string} [labelSelector]
 * @returns {any[]}
 * @throws {CacheError}
 */
export function list(kind, namespace, labelSelector) {
  const gvk = GroupVersionKind.from(kind);
  return listJson(gvk, namespace, labelSelector).map((json) => decode(gvk, json));
}

/**
 * The label selector string for a `spec.selector` such as a Deployment's,
 * e.g. `app=web,tier in (api,cache)`; `undefined` when it selects
 * everything. `matchLabels` become `key=value`; `matchExpressions` become
 * `key in (...)`, `key notin (...)`, `key` and `!key`.
 *
 * @param {{matchLabels?: Record<string, string>, matchExpressions?: {key: string, operator: string, values?: string[]}[]} | undefined} selector
 * @returns {string | undefined}
 */
export function labelSelector(selector) {
  const requirements = [];
  for (const [key, value] of Object.entries(selector?.matchLabels ?? {})) {
    requirements.push(`${key}=${value}`);
  }
  for (const { key, operator, values = [] } of selector?.matchExpressions ?? []) {
    const set = values.join(',');
    switch (operator) {
      case 'In':
        requirements.push(`${key} in (${set})`);
        break;
      case 'NotIn':
        requirements.push(`${key} notin (${set})`);
        break;
      case 'Exists':
        requirements.push(key);
        break;
      case 'DoesNotExist':
        requirements.push(`!${key}`);
        break;
      default:
        requirements.push(`${key} ${operator} (${set})`);
    }
  }
  return requirements.length === 0 ? undefined : requirements.join(',');
}
