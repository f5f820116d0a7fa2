/**
 * A fake host for unit-testing plugins under `node --test`, without wasm:
 * importing this module routes the SDK's log, cache, config, kube and events
 * calls here. Mirrors the Rust SDK's `testing` module.
 *
 * Kubernetes calls and events are recorded ({@link takeKubeCalls},
 * {@link takeEvents}) and answered from scripts ({@link scriptKube},
 * {@link scriptEvents}); unscripted, a `get` throws a `not-found`
 * `KubeError`, a create, replace, merge or strategic patch, or apply returns
 * the body it was sent (a JSON patch: the object's identity only), a delete
 * and a publish succeed. {@link enforce} makes the fake host refuse, as the
 * host does, calls outside the manifest's write rules and events without the
 * `events` capability.
 *
 * ```js
 * import { test } from 'node:test';
 * import assert from 'node:assert/strict';
 * import * as testing from '@herald/sdk/testing';
 * import Plugin from '../src/plugin.js';
 *
 * test('logs each add', () => {
 *   testing.reset();
 *   new Plugin().onAdd(testing.added({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web-0', namespace: 'shop' } }));
 *   assert.deepEqual(testing.takeMessages(), ['added pod=shop/web-0']);
 * });
 * ```
 *
 * State is per process (`node --test` runs each test file in its own
 * process); call {@link reset} at the start of each test.
 *
 * @module
 */

import { bindPlugin } from './component.js';
import { Context, Event, Update } from './event.js';
import { installHost } from './host.js';
import { GroupVersionKind } from './kind.js';
import { KubeError } from './kube.js';
import { Manifest } from './manifest.js';
import * as objects from './objects.js';

/**
 * One line a plugin logged.
 *
 * @typedef {object} LogLine
 * @property {import('./log.js').Level} level Its severity.
 * @property {string} message Its text.
 */

/**
 * One call a plugin made through `kube`, as the host received it.
 *
 * @typedef {object} KubeCall
 * @property {'get' | 'create' | 'update' | 'patch' | 'apply' | 'delete'} verb The verb grants are checked against (`update` is a replace).
 * @property {GroupVersionKind} kind
 * @property {string | undefined} namespace
 * @property {string} name For a create: the body's `metadata.name`, or `''`.
 * @property {string} key `namespace/name`, or `name`.
 * @property {'status' | undefined} subresource
 * @property {string | undefined} body The JSON text sent: the object, or the patch.
 * @property {any} object The body, parsed.
 * @property {'merge' | 'json' | 'strategic' | undefined} patchType
 * @property {boolean} force An apply's `force`.
 * @property {string | undefined} uid A delete's precondition.
 * @property {string | undefined} resourceVersion A delete's precondition.
 * @property {'orphan' | 'background' | 'foreground' | undefined} propagation
 */

let state = freshState();

function freshState() {
  return {
    /** @type {string | undefined} */ config: undefined,
    /** @type {LogLine[]} */ logs: [],
    /** @type {Set<string>} */ subscribed: new Set(),
    /** @type {Map<string, Map<string, string>>} */ cache: new Map(),
    /** @type {KubeCall[]} */ kubeCalls: [],
    /** @type {any[]} */ kubeScripts: [],
    /** @type {any[]} */ events: [],
    /** @type {any[]} */ eventFailures: [],
    /** @type {any} */ manifest: undefined,
  };
}

/** Forgets the configuration, logs, subscriptions, cache, kube calls, events, scripts and {@link enforce}. */
export function reset() {
  state = freshState();
}

/**
 * Sets the configuration `config.get()` returns, given as a value (it is
 * passed to the plugin as JSON, as the host does).
 *
 * @param {unknown} value
 */
export function setConfig(value) {
  setConfigJson(JSON.stringify(value));
}

/**
 * Sets the configuration as JSON text (`config.raw()` returns it as is).
 *
 * @param {string} json
 */
export function setConfigJson(json) {
  if (typeof json !== 'string') {
    throw new TypeError('setConfigJson takes JSON text');
  }
  state.config = json;
}

/** Removes the configuration: `config.get()` returns `undefined`. */
export function clearConfig() {
  state.config = undefined;
}

/**
 * Every line logged since the last take, removed.
 *
 * @returns {LogLine[]}
 */
export function takeLogs() {
  const logs = state.logs;
  state.logs = [];
  return logs;
}

/**
 * The text of every line logged since the last take, removed.
 *
 * @returns {string[]}
 */
export function takeMessages() {
  return takeLogs().map((line) => line.message);
}

/**
 * Every `kube` call since the last take, in order, removed; refused and
 * failed calls included.
 *
 * @returns {KubeCall[]}
 */
export function takeKubeCalls() {
  const calls = state.kubeCalls;
  state.kubeCalls = [];
  return calls;
}

/**
 * Scripts the answer to the kube calls matching `verb` (`get`, `create`,
 * `update`, `patch`, `apply`, `delete`), `kind`, `namespace`, `name` and
 * `subresource` (each left out matches anything): return `returns` (an
 * object, or JSON text) or throw `throws` (a `KubeError`), `times` times
 * (left out: every time). Scripts are tried in the order given; the first
 * that matches answers; one with neither `returns` nor `throws` gives the
 * unscripted answer.
 *
 * ```js
 * testing.scriptKube({ verb: 'get', kind: DEPLOYMENT, name: 'web', returns: web });
 * testing.scriptKube({ verb: 'update', throws: new KubeError('conflict', 'the object has been modified'), times: 1 });
 * ```
 *
 * @param {{verb?: string, kind?: GroupVersionKind | {group: string, version: string, kind: string}, namespace?: string, name?: string, subresource?: string, returns?: unknown, throws?: KubeError, times?: number}} script
 */
export function scriptKube(script) {
  const { verb, kind, namespace, name, subresource, returns, throws, times } = script ?? {};
  if (returns !== undefined && throws !== undefined) {
    throw new TypeError('scriptKube takes returns or throws, not both');
  }
  if (throws !== undefined && !(throws instanceof KubeError)) {
    throw new TypeError("throws must be a KubeError, e.g. new KubeError('conflict', 'stale')");
  }
  if (times !== undefined && !(Number.isInteger(times) && times >= 1)) {
    throw new TypeError('times must be a whole number of at least 1 (or left out for every time)');
  }
  state.kubeScripts.push({
    verb,
    kind: kind === undefined ? undefined : GroupVersionKind.from(kind),
    namespace,
    name,
    subresource,
    returns: returns === undefined || typeof returns === 'string' ? returns : JSON.stringify(returns),
    throws,
    times,
  });
}

/**
 * Every event published since the last take (the contract's `event`
 * records: `regarding`, `related`, `eventType`, `reason`, `action`,
 * `note`), in order, removed; refused ones included.
 *
 * @returns {import('../types/index.js').EventRecord[]}
 */
export function takeEvents() {
  const published = state.events;
  state.events = [];
  return published;
}

/**
 * Makes the next `times` publishes (left out: all) throw `throws`.
 *
 * @param {{throws: KubeError, times?: number}} script
 */
export function scriptEvents({ throws, times } = /** @type {any} */ ({})) {
  if (!(throws instanceof KubeError)) {
    throw new TypeError('throws must be a KubeError');
  }
  state.eventFailures.push({ throws, times });
}

/**
 * Refuses, as the host does, kube calls outside the manifest's write rules
 * and events without its `events` capability, with a `not-granted`
 * `KubeError` (the call is still recorded). Takes a `Manifest`, a plugin (a
 * class or object whose `manifest()` is called), or `undefined` to stop.
 *
 * @param {unknown} manifestOrPlugin
 */
export function enforce(manifestOrPlugin) {
  if (manifestOrPlugin === undefined) {
    state.manifest = undefined;
  } else if (manifestOrPlugin instanceof Manifest) {
    state.manifest = manifestOrPlugin.toRecord();
  } else {
    state.manifest = manifestOf(manifestOrPlugin);
  }
}

/**
 * Makes `kind` visible to cache look-ups, as subscribing to it would. Kinds
 * never subscribed to fail with a `CacheError` (`not-subscribed`).
 *
 * @param {GroupVersionKind | {group: string, version: string, kind: string}} kind
 */
export function subscribe(kind) {
  state.subscribed.add(GroupVersionKind.from(kind).toString());
}

function objectKey(namespace, name) {
  return `${namespace ?? ''}/${name}`;
}

/**
 * Puts `object` (a Kubernetes object with `apiVersion`, `kind` and
 * `metadata.name`) in the cache, replacing one with the same namespace and
 * name, and subscribes to its kind.
 *
 * @param {object} object
 * @param {GroupVersionKind | {group: string, version: string, kind: string}} [kind] Defaults to the object's own.
 */
export function cacheInsert(object, kind = GroupVersionKind.ofObject(object)) {
  cacheInsertJson(kind, JSON.stringify(object));
}

/**
 * Puts an object given as JSON text in the cache under `kind`, keyed by its
 * `metadata.namespace` and `metadata.name`, and subscribes to `kind`.
 *
 * @param {GroupVersionKind | {group: string, version: string, kind: string}} kind
 * @param {string} json
 */
export function cacheInsertJson(kind, json) {
  const gvk = GroupVersionKind.from(kind).toString();
  const object = JSON.parse(json);
  state.subscribed.add(gvk);
  if (!state.cache.has(gvk)) {
    state.cache.set(gvk, new Map());
  }
  state.cache.get(gvk).set(objectKey(objects.namespace(object), objects.name(object)), json);
}

/**
 * Removes `namespace/name` of `kind` from the cache.
 *
 * @param {GroupVersionKind | {group: string, version: string, kind: string}} kind
 * @param {string | undefined} namespace
 * @param {string} name
 */
export function cacheRemove(kind, namespace, name) {
  state.cache.get(GroupVersionKind.from(kind).toString())?.delete(objectKey(namespace, name));
}

/**
 * The plural resource name guessed for `kind` as the host's replayer (and
 * kubectl without discovery) guesses it: lowercase, `-s`/`-x`/`-ch`/`-sh`
 * → `-es`, consonant + `y` → `-ies`, else `-s`.
 *
 * @param {string} kind
 * @returns {string}
 */
export function resourceOf(kind) {
  const lower = kind.toLowerCase();
  if (/(s|x|ch|sh)$/.test(lower)) {
    return `${lower}es`;
  }
  if (/[^aeiou]y$/.test(lower)) {
    return `${lower.slice(0, -1)}ies`;
  }
  return `${lower}s`;
}

/**
 * The context the host would send with `object`: its kind (from
 * `apiVersion` and `kind`), resource, key and resource version; no flags
 * set unless `flags` says so.
 *
 * @param {object} object
 * @param {{kind?: GroupVersionKind, resource?: string, isInitialList?: boolean, isResync?: boolean, finalStateUnknown?: boolean}} [overrides]
 * @returns {Context}
 */
export function contextFor(object, overrides = {}) {
  const kind = overrides.kind ?? GroupVersionKind.ofObject(object);
  return new Context({
    kind,
    resource: overrides.resource ?? resourceOf(kind.kind),
    key: objects.key(object),
    resourceVersion: object?.metadata?.resourceVersion ?? '',
    isInitialList: overrides.isInitialList ?? false,
    isResync: overrides.isResync ?? false,
    finalStateUnknown: overrides.finalStateUnknown ?? false,
  });
}

/**
 * The event `onAdd` would receive for `object`.
 *
 * @param {object} object
 * @returns {Event}
 */
export function added(object) {
  return new Event(contextFor(object), JSON.stringify(object));
}

/**
 * The event `onUpdate` would receive for a change from `old` to `new`.
 *
 * @param {object} old
 * @param {object} updated
 * @returns {Update}
 */
export function updated(old, updated) {
  return new Update(contextFor(updated), JSON.stringify(old), JSON.stringify(updated));
}

/**
 * The event `onDelete` would receive for `object`.
 *
 * @param {object} object
 * @returns {Event}
 */
export function deleted(object) {
  return new Event(contextFor(object), JSON.stringify(object));
}

/**
 * The add replaying `object` to a plugin that joined after the informer
 * synced (`isInitialList` set).
 *
 * @param {object} object
 * @returns {Event}
 */
export function listed(object) {
  return new Event(contextFor(object, { isInitialList: true }), JSON.stringify(object));
}

/**
 * The periodic resync update for `object` (`isResync` set, old and new
 * equal).
 *
 * @param {object} object
 * @returns {Update}
 */
export function resynced(object) {
  const json = JSON.stringify(object);
  return new Update(contextFor(object, { isResync: true }), json, json);
}

/**
 * The delete inferred from a relist, `object` being the last known state
 * (`finalStateUnknown` set).
 *
 * @param {object} object
 * @returns {Event}
 */
export function vanished(object) {
  return new Event(contextFor(object, { finalStateUnknown: true }), JSON.stringify(object));
}

/**
 * What the component would answer the host for `notification`, going
 * through the same glue as the built component: `{tag: 'ok'}` or
 * `{tag: 'err', val: message}` (a thrown error's message, as the host
 * records it). Handlers that return promises are awaited.
 *
 * @param {unknown} plugin The plugin module's default export (a class or object).
 * @param {Event | Update} notification From {@link added}, {@link updated}, ...
 * @param {'add' | 'update' | 'delete'} [type] Needed only to deliver an `Event` as a delete.
 * @returns {Promise<{tag: 'ok', val?: undefined} | {tag: 'err', val: string}>}
 */
export async function dispatch(plugin, notification, type) {
  const { handler } = bindPlugin(plugin);
  const record = { ...notification.context, kind: notification.context.kind.toRecord() };
  if (notification instanceof Update) {
    return handler.onUpdate(record, notification.oldJson, notification.newJson);
  }
  if (!(notification instanceof Event)) {
    throw new TypeError('dispatch takes an Event or an Update');
  }
  return type === 'delete' ? handler.onDelete(record, notification.json) : handler.onAdd(record, notification.json);
}

/**
 * The manifest record the component would return for `plugin` (what
 * `herald plugin check` prints).
 *
 * @param {unknown} plugin The plugin module's default export.
 * @returns {object}
 */
export function manifestOf(plugin) {
  return bindPlugin(plugin).manifest();
}

/** One requirement of a label selector, as a predicate over labels. */
function parseSelector(selector) {
  const parts = [];
  let depth = 0;
  let start = 0;
  for (let index = 0; index < selector.length; index++) {
    const character = selector[index];
    if (character === '(') {
      depth++;
    } else if (character === ')') {
      if (depth === 0) {
        throw new Error(`unbalanced ')' in ${JSON.stringify(selector)}`);
      }
      depth--;
    } else if (character === ',' && depth === 0) {
      parts.push(selector.slice(start, index));
      start = index + 1;
    }
  }
  parts.push(selector.slice(start));
  const check = (word) => {
    if (word === '' || !/^[A-Za-z0-9\-_./]+$/.test(word)) {
      throw new Error(`invalid label key or value ${JSON.stringify(word)}`);
    }
    return word;
  };
  const set = (values) => {
    const trimmed = values.trim();
    if (!trimmed.startsWith('(') || !trimmed.endsWith(')')) {
      throw new Error(`expected a parenthesised set, got ${JSON.stringify(values)}`);
    }
    return trimmed.slice(1, -1).split(',').map((value) => check(value.trim()));
  };
  const has = (labels, key) => Object.hasOwn(labels, key);
  return parts
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .map((part) => {
      let at;
      if ((at = part.indexOf('!=')) !== -1) {
        const [key, value] = [check(part.slice(0, at).trim()), check(part.slice(at + 2).trim())];
        return (labels) => labels[key] !== value;
      }
      if ((at = part.indexOf('==')) !== -1 || (at = part.indexOf('=')) !== -1) {
        const width = part.startsWith('==', at) ? 2 : 1;
        const [key, value] = [check(part.slice(0, at).trim()), check(part.slice(at + width).trim())];
        return (labels) => has(labels, key) && labels[key] === value;
      }
      if ((at = part.indexOf(' notin ')) !== -1) {
        const [key, values] = [check(part.slice(0, at).trim()), set(part.slice(at + 7))];
        return (labels) => !has(labels, key) || !values.includes(labels[key]);
      }
      if ((at = part.indexOf(' in ')) !== -1) {
        const [key, values] = [check(part.slice(0, at).trim()), set(part.slice(at + 4))];
        return (labels) => has(labels, key) && values.includes(labels[key]);
      }
      if (part.startsWith('!')) {
        const key = check(part.slice(1).trim());
        return (labels) => !has(labels, key);
      }
      const key = check(part);
      return (labels) => has(labels, key);
    });
}

/**
 * Whether `labels` match the Kubernetes label selector `selector` (`a=b`,
 * `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`, joined by commas),
 * as the fake cache's `list` applies it. Throws if the selector does not
 * parse.
 *
 * @param {string} selector
 * @param {Record<string, string>} labels
 * @returns {boolean}
 */
export function selectorMatches(selector, labels) {
  return parseSelector(selector).every((requirement) => requirement(labels));
}

function visible(kind) {
  if (!state.subscribed.has(GroupVersionKind.from(kind).toString())) {
    throw { payload: { tag: 'not-subscribed', val: kind } };
  }
}

function notGranted(call) {
  const manifest = state.manifest;
  if (manifest === undefined) {
    return undefined;
  }
  const allowed = manifest.writes.some(
    (rule) =>
      rule.group === call.kind.group &&
      rule.kind === call.kind.kind &&
      rule.verbs.includes(call.verb) &&
      rule.subresource === call.subresource &&
      (rule.namespaces.includes('*') || rule.namespaces.includes(call.namespace ?? '*')),
  );
  if (allowed) {
    return undefined;
  }
  const where = call.namespace === undefined ? 'cluster scope' : `namespace ${call.namespace}`;
  const subresource = call.subresource === undefined ? '' : ` subresource ${call.subresource}`;
  return `no write rule allows ${call.verb} on ${call.kind.group || 'core'}/${call.kind.kind}${subresource} in ${where}`;
}

/** Uses up one use of `script` in `list`. */
function spend(list, script) {
  if (script.times !== undefined) {
    script.times -= 1;
    if (script.times === 0) {
      list.splice(list.indexOf(script), 1);
    }
  }
}

/** Records `call` and answers it: not-granted, a script, or `fallback()`. */
function answer(fields, fallback) {
  const kind = GroupVersionKind.from(fields.kind);
  const call = {
    verb: fields.verb,
    kind,
    namespace: fields.namespace ?? undefined,
    name: fields.name,
    key: fields.namespace ? `${fields.namespace}/${fields.name}` : fields.name,
    subresource: fields.subresource ?? undefined,
    body: fields.body,
    object: fields.body === undefined ? undefined : JSON.parse(fields.body),
    patchType: fields.patchType,
    force: fields.force ?? false,
    uid: fields.uid,
    resourceVersion: fields.resourceVersion,
    propagation: fields.propagation,
  };
  state.kubeCalls.push(call);
  const refusal = notGranted(call);
  if (refusal !== undefined) {
    throw { payload: { tag: 'not-granted', val: refusal } };
  }
  const script = state.kubeScripts.find(
    (candidate) =>
      (candidate.verb === undefined || candidate.verb === call.verb) &&
      (candidate.kind === undefined || candidate.kind.equals(kind)) &&
      (candidate.namespace === undefined || candidate.namespace === call.namespace) &&
      (candidate.name === undefined || candidate.name === call.name) &&
      (candidate.subresource === undefined || candidate.subresource === call.subresource),
  );
  if (script !== undefined) {
    spend(state.kubeScripts, script);
    if (script.throws !== undefined) {
      throw { payload: script.throws.toRecord() };
    }
    if (script.returns !== undefined) {
      return script.returns;
    }
  }
  return fallback(call);
}

function identity(call) {
  const metadata = call.namespace === undefined ? { name: call.name } : { name: call.name, namespace: call.namespace };
  return JSON.stringify({ apiVersion: call.kind.apiVersion(), kind: call.kind.kind, metadata });
}

function notFound(call) {
  const group = call.kind.group === '' ? '' : `.${call.kind.group}`;
  throw { payload: { tag: 'not-found', val: `${resourceOf(call.kind.kind)}${group} "${call.name}" not found` } };
}

installHost({
  kubeGet(target) {
    return answer({ verb: 'get', ...target }, notFound);
  },
  kubeCreate(kind, namespace, body) {
    const name = JSON.parse(body)?.metadata?.name ?? '';
    return answer({ verb: 'create', kind, namespace, name, body }, () => body);
  },
  kubeReplace(target, body) {
    return answer({ verb: 'update', ...target, body }, () => body);
  },
  kubePatch(target, patchType, body) {
    return answer({ verb: 'patch', ...target, body, patchType }, (call) => (patchType === 'json' ? identity(call) : body));
  },
  kubeApply(target, body, force) {
    return answer({ verb: 'apply', ...target, body, force }, () => body);
  },
  kubeDelete(target, options) {
    answer({ verb: 'delete', ...target, ...options }, () => undefined);
  },
  eventsPublish(event) {
    state.events.push(event);
    if (state.manifest !== undefined && !state.manifest.capabilities.includes('events')) {
      throw { payload: { tag: 'not-granted', val: 'the events capability is not declared in the manifest' } };
    }
    const failure = state.eventFailures[0];
    if (failure !== undefined) {
      spend(state.eventFailures, failure);
      throw { payload: failure.throws.toRecord() };
    }
  },
  log(level, message) {
    state.logs.push({ level, message });
  },
  configGet() {
    return state.config;
  },
  cacheGet(kind, namespace, name) {
    visible(kind);
    return state.cache.get(GroupVersionKind.from(kind).toString())?.get(objectKey(namespace, name));
  },
  cacheList(kind, namespace, labelSelector) {
    let requirements;
    try {
      requirements = parseSelector(labelSelector ?? '');
    } catch (error) {
      throw { payload: { tag: 'invalid-selector', val: error.message } };
    }
    visible(kind);
    const found = [];
    const entries = [...(state.cache.get(GroupVersionKind.from(kind).toString()) ?? new Map())].sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    for (const [, json] of entries) {
      const object = JSON.parse(json);
      if (namespace !== undefined && objects.namespace(object) !== namespace) {
        continue;
      }
      const labels = objects.labels(object);
      if (requirements.every((requirement) => requirement(labels))) {
        found.push(json);
      }
    }
    return found;
  },
});

/**
 * One event of a replay and what came of it.
 *
 * @typedef {object} ReplayedEvent
 * @property {number} line The 1-based line of the event in the text.
 * @property {'add' | 'update' | 'delete'} type
 * @property {string} key The object's key.
 * @property {{tag: 'ok', val?: undefined} | {tag: 'err', val: string}} result
 * @property {LogLine[]} logs What the plugin logged while handling it.
 */

const WATCH_TYPES = { ADDED: 'add', MODIFIED: 'update', DELETED: 'delete', add: 'add', update: 'update', delete: 'delete' };

/**
 * Feeds recorded events to `plugin` through the fake host, as
 * `herald plugin replay` feeds them to a component: one JSON object per
 * line, `{"type": "add"|"update"|"delete" (or ADDED|MODIFIED|DELETED),
 * "object": {...}, "old": {...}}` with optional `initial`, `resync` and
 * `finalStateUnknown` flags (the format of `examples/events/`). Each object
 * is put in (or, on delete, removed from) the fake cache before its handler
 * runs; an update without `old` gets the state last seen for its key. The
 * plugin is one instance for the whole replay; the fake host is not reset.
 *
 * @param {unknown} plugin The plugin module's default export.
 * @param {string} text The event file's content.
 * @returns {Promise<ReplayedEvent[]>}
 */
export async function replay(plugin, text) {
  const { handler } = bindPlugin(plugin);
  const lastSeen = new Map();
  const replayed = [];
  const lines = text.split('\n');
  for (let index = 0; index < lines.length; index++) {
    if (lines[index].trim() === '') {
      continue;
    }
    const line = index + 1;
    let event;
    try {
      event = JSON.parse(lines[index]);
    } catch (error) {
      throw new Error(`line ${line}: not JSON: ${error.message}`);
    }
    const type = WATCH_TYPES[event?.type];
    if (type === undefined) {
      throw new Error(`line ${line}: unknown event type ${JSON.stringify(event?.type)}`);
    }
    const { object } = event;
    const kind = GroupVersionKind.ofObject(object);
    const context = contextFor(object, {
      isInitialList: Boolean(event.initial),
      isResync: Boolean(event.resync),
      finalStateUnknown: Boolean(event.finalStateUnknown),
    });
    const record = { ...context, kind: kind.toRecord() };
    const json = JSON.stringify(object);
    const identity = `${kind}/${context.key}`;
    let result;
    if (type === 'add') {
      cacheInsertJson(kind, json);
      result = await handler.onAdd(record, json);
    } else if (type === 'update') {
      const old = event.old === undefined ? lastSeen.get(identity) : JSON.stringify(event.old);
      if (old === undefined) {
        throw new Error(`line ${line}: an update of ${context.key} with no old state recorded or seen before`);
      }
      cacheInsertJson(kind, json);
      result = await handler.onUpdate(record, old, json);
    } else {
      cacheRemove(kind, objects.namespace(object), objects.name(object));
      result = await handler.onDelete(record, json);
    }
    lastSeen.set(identity, json);
    replayed.push({ line, type, key: context.key, result, logs: takeLogs() });
  }
  return replayed;
}
