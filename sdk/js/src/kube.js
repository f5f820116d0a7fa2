/**
 * Reads and writes through the Kubernetes API server, with the host's client
 * and the deadline of the handler call (the `kube` interface of the WIT).
 *
 * ```js
 * const deployments = new kube.Api('apps', 'v1', 'Deployment', { namespace: 'shop' });
 * const web = deployments.get('web');                          // from the API server, not the cache
 * deployments.patch('web', { spec: { replicas: 3 } });         // JSON merge patch
 * deployments.apply('web', { spec: { replicas: 3 } }, { force: true });
 * try {
 *   deployments.delete('old', { uid: web.metadata.uid, propagation: 'foreground' });
 * } catch (error) {
 *   if (!(error instanceof KubeError && error.kind === 'not-found')) throw error;
 * }
 * ```
 *
 * Every call must be covered by a `WriteRule` in the manifest (`get` too:
 * it is a request to the API server) and by the operator's grant; otherwise
 * it throws a `KubeError` of kind `'not-granted'` without a request leaving
 * the host. In the operator's dry-run mode writes are sent with
 * `dryRun=All`: they answer as if they had happened, and nothing persists.
 * Server-side apply uses the field manager `herald.<plugin-name>`.
 *
 * @module
 */

import { HeraldError } from './errors.js';
import { host } from './host.js';
import { GroupVersionKind } from './kind.js';

/**
 * The cases of the WIT `kube-error` variant, and whether retrying the same
 * call later may succeed.
 */
const KINDS = Object.freeze({
  'not-granted': false,
  'not-found': false,
  'already-exists': false,
  conflict: false,
  invalid: false,
  forbidden: false,
  'too-many-requests': true,
  timeout: true,
  unavailable: true,
  failed: false,
});

/**
 * Why a `kube` call (or an event publish) failed: one class, `kind` says
 * which case of the WIT `kube-error` variant:
 *
 * - `'not-granted'`: outside the plugin's write rules or grant; no request was sent;
 * - `'not-found'` (404), `'already-exists'` (409 on create), `'conflict'`
 *   (409: stale resourceVersion, failed precondition, apply conflict);
 * - `'invalid'` (422): `causes` lists the fields at fault;
 * - `'forbidden'` (403): the host's service account may not;
 * - `'too-many-requests'` (429 or the plugin's rate limit): `retryAfterMs` when known;
 * - `'timeout'`, `'unavailable'` (unreachable or 5xx);
 * - `'failed'`: any other refusal, with `code` and `reason`.
 *
 * `retryable` says whether the same call may succeed later unchanged
 * (throttled, timeout, unavailable); a conflict needs a fresh read first.
 * Uncaught, it fails the handler call and the host retries with backoff.
 */
export class KubeError extends HeraldError {
  /**
   * @param {keyof typeof KINDS} kind The case.
   * @param {string} message The host's or the API server's message.
   * @param {{causes?: {reason: string, message: string, field: string}[], retryAfterMs?: number, code?: number, reason?: string}} [details]
   */
  constructor(kind, message, details = {}) {
    if (!Object.hasOwn(KINDS, kind)) {
      throw new TypeError(`unknown kube error kind ${String(kind)}: one of ${Object.keys(KINDS).join(', ')}`);
    }
    super(`${kind}: ${message}`);
    this.name = 'KubeError';
    /** Which case of the WIT variant. */
    this.kind = kind;
    /** The host's or the API server's own message. */
    this.detail = message;
    /** Whether retrying the same call later may succeed. */
    this.retryable = KINDS[kind];
    if (kind === 'invalid') {
      /** The server's causes (`invalid` only). */
      this.causes = (details.causes ?? []).map(({ reason, message, field }) => ({ reason, message, field }));
    }
    if (kind === 'too-many-requests') {
      /** How long to wait before retrying, in milliseconds, when known (`too-many-requests` only). */
      this.retryAfterMs = details.retryAfterMs ?? undefined;
    }
    if (kind === 'failed') {
      /** The HTTP status code (`failed` only). */
      this.code = details.code ?? 0;
      /** The Status reason, possibly empty (`failed` only). */
      this.reason = details.reason ?? '';
    }
  }

  /**
   * The error for what a host import threw (`{payload: {tag, val}}`, the
   * WIT `kube-error`); anything else is returned unchanged.
   *
   * @param {unknown} thrown
   * @returns {unknown}
   */
  static fromHost(thrown) {
    const payload = /** @type {any} */ (thrown)?.payload;
    if (payload === undefined || !Object.hasOwn(KINDS, payload?.tag)) {
      return thrown;
    }
    const { tag, val } = payload;
    switch (tag) {
      case 'invalid':
        return new KubeError(tag, val.message, { causes: val.causes });
      case 'too-many-requests':
        return new KubeError(tag, val.message, {
          retryAfterMs: val.retryAfterMs === undefined || val.retryAfterMs === null ? undefined : Number(val.retryAfterMs),
        });
      case 'failed':
        return new KubeError(tag, val.message, { code: val.code, reason: val.reason });
      default:
        return new KubeError(tag, String(val));
    }
  }

  /**
   * The WIT `kube-error` value this error stands for (what a host would
   * throw as the payload).
   *
   * @returns {{tag: string, val: any}}
   */
  toRecord() {
    switch (this.kind) {
      case 'invalid':
        return { tag: this.kind, val: { message: this.detail, causes: this.causes } };
      case 'too-many-requests':
        return {
          tag: this.kind,
          val: { message: this.detail, retryAfterMs: this.retryAfterMs === undefined ? undefined : BigInt(this.retryAfterMs) },
        };
      case 'failed':
        return { tag: this.kind, val: { code: this.code, reason: this.reason, message: this.detail } };
      default:
        return { tag: this.kind, val: this.detail };
    }
  }
}

/** The patch types `Api.patch` accepts. */
export const PATCH_TYPES = Object.freeze(['merge', 'json', 'strategic']);
/** The propagation policies `Api.delete` accepts. */
export const PROPAGATIONS = Object.freeze(['orphan', 'background', 'foreground']);

/** Calls a host import, turning a `kube-error` into a {@link KubeError}. */
export function callHost(call) {
  try {
    return call();
  } catch (thrown) {
    throw KubeError.fromHost(thrown);
  }
}

function text(body, what) {
  if (typeof body === 'string') {
    return body;
  }
  if (body === null || typeof body !== 'object') {
    throw new TypeError(`${what} must be an object or JSON text, got ${body === null ? 'null' : typeof body}`);
  }
  return JSON.stringify(body);
}

function decode(json, kind) {
  try {
    return JSON.parse(json);
  } catch (error) {
    throw new HeraldError(`decoding the ${kind} the API server returned: ${error.message}`);
  }
}

/**
 * One kind, in one namespace (or cluster-scoped), on the API server.
 * Objects are plain parsed JSON and travel as JSON text.
 */
export class Api {
  #kind;
  #namespace;

  /**
   * `new Api('apps', 'v1', 'Deployment', {namespace: 'shop'})`, or
   * `new Api(kind, {namespace})` with a `GroupVersionKind` or a
   * `{group, version, kind}` record; leave `namespace` out for a
   * cluster-scoped kind.
   *
   * @param {...any} args
   */
  constructor(...args) {
    let options;
    if (typeof args[0] === 'string') {
      const [group, version, kind] = args;
      this.#kind = new GroupVersionKind(group, version, kind);
      options = args[3];
    } else {
      this.#kind = GroupVersionKind.from(args[0]);
      options = args[1];
    }
    const namespace = options?.namespace ?? undefined;
    if (namespace !== undefined && (typeof namespace !== 'string' || namespace === '')) {
      throw new TypeError(`namespace must be a non-empty string or undefined, got ${JSON.stringify(namespace)}`);
    }
    this.#namespace = namespace;
  }

  /** The kind. */
  get kind() {
    return this.#kind;
  }

  /** The namespace; `undefined` for a cluster-scoped kind. */
  get namespace() {
    return this.#namespace;
  }

  #target(name, subresource) {
    if (typeof name !== 'string' || name === '') {
      throw new TypeError(`name must be a non-empty string, got ${JSON.stringify(name)}`);
    }
    return { kind: this.#kind.toRecord(), namespace: this.#namespace, name, subresource };
  }

  /** `object` as JSON text; an object gets `apiVersion`, `kind`, `metadata.name` and namespace filled in when missing. */
  #body(object, name) {
    if (typeof object === 'string') {
      return object;
    }
    if (object === null || typeof object !== 'object' || Array.isArray(object)) {
      throw new TypeError('the object must be a Kubernetes object or JSON text');
    }
    const metadata = { ...(object.metadata ?? {}) };
    if (name !== undefined) {
      metadata.name ??= name;
    }
    if (this.#namespace !== undefined) {
      metadata.namespace ??= this.#namespace;
    }
    return JSON.stringify({ apiVersion: this.#kind.apiVersion(), kind: this.#kind.kind, ...object, metadata });
  }

  #parse(json) {
    return decode(json, this.#kind.toString());
  }

  /**
   * The object `name` as the API server has it now (verb `get`); throws a
   * `not-found` {@link KubeError} if it does not exist.
   *
   * @param {string} name
   * @returns {any}
   */
  get(name) {
    const target = this.#target(name);
    return this.#parse(callHost(() => host().kubeGet(target)));
  }

  /**
   * The object read through its `status` subresource (verb `get` on `status`).
   *
   * @param {string} name
   * @returns {any}
   */
  getStatus(name) {
    const target = this.#target(name, 'status');
    return this.#parse(callHost(() => host().kubeGet(target)));
  }

  /**
   * Creates `object` (verb `create`); returns it as stored.
   *
   * @param {object | string} object
   * @returns {any}
   */
  create(object) {
    const body = this.#body(object);
    return this.#parse(callHost(() => host().kubeCreate(this.#kind.toRecord(), this.#namespace, body)));
  }

  /**
   * Replaces the object with `object` (verb `update`); a
   * `metadata.resourceVersion` in it makes the replace conditional.
   *
   * @param {string} name
   * @param {object | string} object
   * @returns {any}
   */
  replace(name, object) {
    return this.#replace(name, object, undefined);
  }

  /**
   * Patches the object (verb `patch`): an object for a `'merge'` (default)
   * or `'strategic'` patch, an array of operations for a `'json'` patch, or
   * the JSON text of either.
   *
   * @param {string} name
   * @param {object | any[] | string} patch
   * @param {{type?: 'merge' | 'json' | 'strategic'}} [options]
   * @returns {any}
   */
  patch(name, patch, options) {
    return this.#patch(name, patch, options, undefined);
  }

  /**
   * Server-side applies `object` (verb `apply`) as the field manager
   * `herald.<plugin-name>`; `force` takes over fields other managers own
   * instead of failing with a `conflict`.
   *
   * @param {string} name
   * @param {object | string} object
   * @param {{force?: boolean}} [options]
   * @returns {any}
   */
  apply(name, object, options) {
    return this.#apply(name, object, options, undefined);
  }

  /**
   * Deletes the object (verb `delete`). `uid` and `resourceVersion` are
   * preconditions (a `conflict` if the object no longer matches);
   * `propagation` is `'orphan'`, `'background'` or `'foreground'`.
   *
   * @param {string} name
   * @param {{uid?: string, resourceVersion?: string, propagation?: 'orphan' | 'background' | 'foreground'}} [options]
   * @returns {void}
   */
  delete(name, options = {}) {
    const { uid, resourceVersion, propagation } = options;
    if (propagation !== undefined && !PROPAGATIONS.includes(propagation)) {
      throw new TypeError(`propagation must be one of ${PROPAGATIONS.join(', ')}, got ${String(propagation)}`);
    }
    const target = this.#target(name);
    callHost(() => host().kubeDelete(target, { uid, resourceVersion, propagation }));
  }

  /**
   * Replaces the object's status (verb `update` on `status`).
   *
   * @param {string} name
   * @param {object | string} object
   * @returns {any}
   */
  replaceStatus(name, object) {
    return this.#replace(name, object, 'status');
  }

  /**
   * Patches the object's status (verb `patch` on `status`).
   *
   * @param {string} name
   * @param {object | any[] | string} patch
   * @param {{type?: 'merge' | 'json' | 'strategic'}} [options]
   * @returns {any}
   */
  patchStatus(name, patch, options) {
    return this.#patch(name, patch, options, 'status');
  }

  /**
   * Server-side applies the object's status (verb `apply` on `status`).
   *
   * @param {string} name
   * @param {object | string} object
   * @param {{force?: boolean}} [options]
   * @returns {any}
   */
  applyStatus(name, object, options) {
    return this.#apply(name, object, options, 'status');
  }

  #replace(name, object, subresource) {
    const target = this.#target(name, subresource);
    const body = this.#body(object, name);
    return this.#parse(callHost(() => host().kubeReplace(target, body)));
  }

  #patch(name, patch, options, subresource) {
    const type = options?.type ?? 'merge';
    if (!PATCH_TYPES.includes(type)) {
      throw new TypeError(`patch type must be one of ${PATCH_TYPES.join(', ')}, got ${String(type)}`);
    }
    const target = this.#target(name, subresource);
    const body = text(patch, 'the patch');
    return this.#parse(callHost(() => host().kubePatch(target, type, body)));
  }

  #apply(name, object, options, subresource) {
    const target = this.#target(name, subresource);
    const body = this.#body(object, name);
    return this.#parse(callHost(() => host().kubeApply(target, body, options?.force === true)));
  }
}
