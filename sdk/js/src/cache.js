/**
 * Read-only look-ups in the host's shared cache (a lister). Only kinds the
 * plugin subscribed to are visible, and only within each subscription's
 * namespace and selectors.
 *
 * ```js
 * const replicaSets = cache.list(kinds.ReplicaSet, 'shop', 'app=web');
 * const one = cache.get(kinds.ReplicaSet, 'shop', 'web-5d8f7'); // undefined if not cached
 * ```
 *
 * Look-ups by a label selector scan the objects of the subscription. A
 * plugin that looks objects up by the same thing on every call declares an
 * {@link Index} in its manifest instead (client-go's indexers): the host
 * files every cached object under its value, so {@link byIndex} costs the
 * objects it finds, whatever the size of the cache.
 *
 * ```js
 * new Manifest('rollouts', '0.1.0')
 *   .subscribe(Subscription.to(kinds.Deployment))
 *   .subscribe(Subscription.to(kinds.ReplicaSet))
 *   .index(Index.byOwner('owner', kinds.ReplicaSet));
 * // In a handler: the ReplicaSets a Deployment (its UID) owns.
 * const owned = cache.byIndex('owner', deployment.metadata.uid, 'shop');
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
 * - `'unknown-index'`: the manifest declares no index named `detail`;
 * - `'decode'`: a cached object was not JSON (`detail` says why).
 */
export class CacheError extends HeraldError {
  /**
   * @param {'not-subscribed' | 'invalid-selector' | 'unknown-index' | 'decode'} reason
   * @param {GroupVersionKind | undefined} kind The kind looked up.
   * @param {string} [detail] The selector parser's or decoder's complaint.
   */
  constructor(reason, kind, detail) {
    const message = {
      'not-subscribed': () => `not subscribed to ${kind}`,
      'invalid-selector': () => `invalid label selector: ${detail}`,
      'unknown-index': () => `the manifest declares no index named ${JSON.stringify(detail)}`,
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
  if (payload?.tag === 'unknown-index') {
    return new CacheError('unknown-index', kind, String(payload.val));
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

const INDEX_BY = Object.freeze(['label', 'field', 'owner']);

/**
 * A secondary index of the cache, declared with `Manifest.index` and looked
 * up with {@link byIndex}. The host keeps it for the informer of its kind
 * (shared with every plugin declaring the same one) and refuses to load a
 * plugin whose index names a kind it does not subscribe to.
 */
export class Index {
  /**
   * @param {string} name The name it is looked up by; unique in the manifest.
   * @param {GroupVersionKind | {group: string, version: string, kind: string}} kind The kind whose cached objects it files.
   * @param {'label' | 'field' | 'owner'} by What it files them under.
   * @param {string} [key] The label key or field path (`spec.nodeName`); none by owner.
   */
  constructor(name, kind, by, key) {
    if (typeof name !== 'string' || name === '') {
      throw new TypeError('an index needs a name');
    }
    if (!INDEX_BY.includes(by)) {
      throw new TypeError(`an index is by ${INDEX_BY.join(', ')}, got ${String(by)}`);
    }
    if ((by === 'owner') !== (key === undefined)) {
      throw new TypeError('an index by label or field names its key or path; one by owner none');
    }
    /** The name. */
    this.name = name;
    /** The kind. */
    this.kind = GroupVersionKind.from(kind);
    /** `'label'`, `'field'` or `'owner'`. */
    this.by = by;
    /** The label key or the field path; `undefined` by owner. */
    this.key = key;
    Object.freeze(this);
  }

  /**
   * Objects of `kind` by the UIDs of their owners: the ReplicaSets of a
   * Deployment, the Pods of a ReplicaSet.
   *
   * @param {string} name
   * @param {GroupVersionKind | {group: string, version: string, kind: string}} kind
   * @returns {Index}
   */
  static byOwner(name, kind) {
    return new Index(name, kind, 'owner');
  }

  /**
   * Objects of `kind` by the value of label `key`; objects without it are not filed.
   *
   * @param {string} name
   * @param {GroupVersionKind | {group: string, version: string, kind: string}} kind
   * @param {string} key
   * @returns {Index}
   */
  static byLabel(name, kind, key) {
    return new Index(name, kind, 'label', key);
  }

  /**
   * Objects of `kind` by the value at a field path such as `spec.nodeName`;
   * a string, number or boolean is filed as its text.
   *
   * @param {string} name
   * @param {GroupVersionKind | {group: string, version: string, kind: string}} kind
   * @param {string} path
   * @returns {Index}
   */
  static byField(name, kind, path) {
    return new Index(name, kind, 'field', path);
  }

  /**
   * The values `object` is filed under, as the host computes them.
   *
   * @param {any} object
   * @returns {string[]}
   */
  values(object) {
    const text = (value) =>
      typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'boolean' ? String(value) : undefined;
    const metadata = object?.metadata ?? {};
    if (this.by === 'owner') {
      return (metadata.ownerReferences ?? []).map((owner) => owner?.uid).filter((uid) => typeof uid === 'string' && uid !== '');
    }
    const found =
      this.by === 'label'
        ? text(metadata.labels?.[this.key])
        : text(this.key.split('.').reduce((value, step) => (value !== null && typeof value === 'object' ? value[step] : undefined), object));
    return found === undefined ? [] : [found];
  }

  /**
   * The contract's `index-definition` record.
   *
   * @returns {import('../types/index.js').IndexDefinitionRecord}
   */
  toRecord() {
    return {
      name: this.name,
      kind: this.kind.toRecord(),
      by: this.by === 'owner' ? { tag: 'owner' } : { tag: this.by, val: this.key },
    };
  }
}

/**
 * The cached objects that the manifest's index `name` files under `value`
 * (only in `namespace`, if given), as JSON texts sorted by key.
 *
 * @param {string} name
 * @param {string} value
 * @param {string} [namespace]
 * @returns {string[]}
 * @throws {CacheError} `unknown-index` when the manifest declares no such index.
 */
export function byIndexJson(name, value, namespace) {
  if (typeof name !== 'string' || typeof value !== 'string') {
    throw new TypeError('byIndex takes an index name and a value (strings)');
  }
  try {
    return host().indexLookup(name, value, optionalString(namespace, 'namespace'));
  } catch (thrown) {
    throw fromHost(thrown, undefined);
  }
}

/**
 * The cached objects that the manifest's index `name` files under `value`
 * (only in `namespace`, if given), parsed, sorted by key.
 *
 * @param {string} name
 * @param {string} value
 * @param {string} [namespace]
 * @returns {any[]}
 * @throws {CacheError}
 */
export function byIndex(name, value, namespace) {
  return byIndexJson(name, value, namespace).map((json) => decode(`index ${name}`, json));
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
