/**
 * Kubernetes Events (`events.k8s.io/v1`) about objects, reported by the
 * plugin (the reporting controller is `herald.dev/<plugin-name>`). Needs the
 * `events` capability in the manifest (`.capability(EVENTS)`), granted by
 * the operator.
 *
 * ```js
 * events.warning(pod, 'DisallowedImage', `image ${image} is not allowed`);
 * events.normal(deployment, 'Scaled', 'scaled to 3 replicas', { action: 'Scale' });
 * ```
 *
 * The event is about `object` (its `apiVersion`, `kind` and `metadata` name,
 * namespace, uid and resourceVersion); `related` names a second object. The
 * host merges repeats into a series and rate-limits floods about one
 * object, as client-go's recorder does; a dropped repeat is not an error.
 * Failures throw a `KubeError` (`not-granted` without the capability).
 *
 * @module
 */

import { host } from './host.js';
import { GroupVersionKind } from './kind.js';
import { callHost } from './kube.js';
import { EVENTS } from './manifest.js';

/** The capability to declare: `manifest.capability(events.CAPABILITY)`. */
export const CAPABILITY = EVENTS;
/** `reason` and `action` are at most this many characters. */
export const MAX_REASON = 128;
/** `note` is at most this many bytes (UTF-8); longer notes are cut. */
export const MAX_NOTE_BYTES = 1024;

/**
 * The contract's `object-reference` for `object`; `kind` overrides the
 * object's own `apiVersion` and `kind`.
 *
 * @param {any} object
 * @param {GroupVersionKind | {group: string, version: string, kind: string}} [kind]
 * @returns {import('../types/index.js').ObjectReferenceRecord}
 */
export function referenceTo(object, kind) {
  if (object === null || typeof object !== 'object') {
    throw new TypeError(`expected a Kubernetes object, got ${object === null ? 'null' : typeof object}`);
  }
  let gvk;
  if (kind !== undefined) {
    gvk = GroupVersionKind.from(kind);
  } else if (typeof object.apiVersion === 'string' && typeof object.kind === 'string') {
    gvk = GroupVersionKind.ofObject(object);
  } else {
    throw new TypeError('the object has no apiVersion and kind: pass {kind}');
  }
  const metadata = object.metadata ?? {};
  if (typeof metadata.name !== 'string' || metadata.name === '') {
    throw new TypeError('the object has no metadata.name');
  }
  return {
    kind: gvk.toRecord(),
    namespace: metadata.namespace || undefined,
    name: metadata.name,
    uid: metadata.uid || undefined,
    resourceVersion: metadata.resourceVersion || undefined,
  };
}

function short(value, what) {
  if (typeof value !== 'string' || value === '') {
    throw new TypeError(`${what} must be a non-empty string (UpperCamelCase), got ${JSON.stringify(value)}`);
  }
  if (value.length > MAX_REASON) {
    throw new RangeError(`${what} is ${value.length} characters, more than ${MAX_REASON}`);
  }
  return value;
}

function cut(note) {
  if (typeof note !== 'string') {
    throw new TypeError(`note must be a string, got ${typeof note}`);
  }
  const bytes = new TextEncoder().encode(note);
  if (bytes.length <= MAX_NOTE_BYTES) {
    return note;
  }
  const kept = new TextDecoder().decode(bytes.slice(0, MAX_NOTE_BYTES - 3));
  // A cut inside a character decodes to U+FFFD at the end: drop it.
  return `${kept.replace(/\uFFFD+$/, '')}…`;
}

/**
 * The event {@link publish} would send, without sending it (the contract's
 * `event` record). `action` defaults to `reason`; a note over 1 KiB is cut
 * and ends with `…`.
 *
 * @param {any} object
 * @param {'normal' | 'warning'} type
 * @param {string} reason
 * @param {string} note
 * @param {{action?: string, related?: any, kind?: GroupVersionKind | {group: string, version: string, kind: string}}} [options]
 * @returns {import('../types/index.js').EventRecord}
 */
export function event(object, type, reason, note, options = {}) {
  if (type !== 'normal' && type !== 'warning') {
    throw new TypeError(`type must be 'normal' or 'warning', got ${String(type)}`);
  }
  return {
    regarding: referenceTo(object, options.kind),
    related: options.related === undefined ? undefined : referenceTo(options.related),
    eventType: type,
    reason: short(reason, 'reason'),
    action: short(options.action ?? reason, 'action'),
    note: cut(note),
  };
}

/**
 * Records an event of `type` about `object`. See {@link warning} and {@link normal}.
 *
 * @param {any} object
 * @param {'normal' | 'warning'} type
 * @param {string} reason
 * @param {string} note
 * @param {{action?: string, related?: any, kind?: GroupVersionKind | {group: string, version: string, kind: string}}} [options]
 */
export function publish(object, type, reason, note, options) {
  const record = event(object, type, reason, note, options);
  callHost(() => host().eventsPublish(record));
}

/**
 * Records a Warning event about `object`: `reason` (UpperCamelCase, at most
 * 128 characters), `note` (at most 1 KiB, cut beyond); options: `action`
 * (defaults to `reason`), `related` (a second object), `kind` (for an
 * object without `apiVersion` and `kind`).
 *
 * @param {any} object
 * @param {string} reason
 * @param {string} note
 * @param {{action?: string, related?: any, kind?: GroupVersionKind | {group: string, version: string, kind: string}}} [options]
 */
export function warning(object, reason, note, options) {
  publish(object, 'warning', reason, note, options);
}

/**
 * Records a Normal event about `object` (arguments as {@link warning}).
 *
 * @param {any} object
 * @param {string} reason
 * @param {string} note
 * @param {{action?: string, related?: any, kind?: GroupVersionKind | {group: string, version: string, kind: string}}} [options]
 */
export function normal(object, reason, note, options) {
  publish(object, 'normal', reason, note, options);
}
