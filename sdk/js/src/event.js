/**
 * The notifications a handler receives: {@link Event} for adds and deletes,
 * {@link Update} for updates, both carrying a {@link Context}.
 *
 * @module
 */

import { HeraldError } from './errors.js';
import { GroupVersionKind } from './kind.js';

/**
 * Facts about the notification being delivered, as the host sent them (the
 * WIT `event-context`). Immutable.
 */
export class Context {
  /**
   * @param {object} fields The `event-context` record; the flags default to false.
   * @param {GroupVersionKind | {group: string, version: string, kind: string}} fields.kind
   * @param {string} fields.resource
   * @param {string} fields.key
   * @param {string} fields.resourceVersion
   * @param {boolean} [fields.isInitialList]
   * @param {boolean} [fields.isResync]
   * @param {boolean} [fields.finalStateUnknown]
   */
  constructor({ kind, resource, key, resourceVersion, isInitialList = false, isResync = false, finalStateUnknown = false }) {
    /** The subscription's kind. */
    this.kind = GroupVersionKind.from(kind);
    /** The plural resource name the kind resolved to, e.g. `pods`. */
    this.resource = resource;
    /** The object's key: `namespace/name`, or `name` when cluster-scoped. */
    this.key = key;
    /** The `metadata.resourceVersion` of the (new) object. */
    this.resourceVersion = resourceVersion;
    /** A synthetic add replaying the cache to a plugin that joined after the informer synced. */
    this.isInitialList = Boolean(isInitialList);
    /** A periodic resync update: old and new are the same state. */
    this.isResync = Boolean(isResync);
    /** A delete inferred from a relist; the object is its last known state. */
    this.finalStateUnknown = Boolean(finalStateUnknown);
    Object.freeze(this);
  }

  /**
   * The namespace part of the key; `undefined` for a cluster-scoped object.
   *
   * @returns {string | undefined}
   */
  get namespace() {
    const slash = this.key.indexOf('/');
    return slash === -1 ? undefined : this.key.slice(0, slash);
  }

  /**
   * The name part of the key.
   *
   * @returns {string}
   */
  get name() {
    const slash = this.key.indexOf('/');
    return slash === -1 ? this.key : this.key.slice(slash + 1);
  }
}

function parse(json, what) {
  try {
    return JSON.parse(json);
  } catch (error) {
    throw new HeraldError(`decoding the ${what} as JSON: ${error.message}`);
  }
}

/** Accessors shared by {@link Event} and {@link Update}, forwarding to the context. */
class Notification {
  /** @param {Context} context */
  constructor(context) {
    if (!(context instanceof Context)) {
      throw new TypeError('a notification needs a Context');
    }
    /** Everything the host said about this notification. */
    this.context = context;
  }

  /** The subscription's kind. @returns {GroupVersionKind} */
  get kind() {
    return this.context.kind;
  }

  /** The plural resource name, e.g. `pods`. @returns {string} */
  get resource() {
    return this.context.resource;
  }

  /** The object's key: `namespace/name`, or `name` when cluster-scoped. @returns {string} */
  get key() {
    return this.context.key;
  }

  /** The object's namespace; `undefined` when cluster-scoped. @returns {string | undefined} */
  get namespace() {
    return this.context.namespace;
  }

  /** The object's name. @returns {string} */
  get name() {
    return this.context.name;
  }

  /** The `metadata.resourceVersion` of the (new) object. @returns {string} */
  get resourceVersion() {
    return this.context.resourceVersion;
  }

  /** Whether this is a synthetic add replaying the cache on join. @returns {boolean} */
  get isInitialList() {
    return this.context.isInitialList;
  }

  /** Whether this is a periodic resync (old and new are equal). @returns {boolean} */
  get isResync() {
    return this.context.isResync;
  }

  /** Whether this delete was inferred from a relist (a tombstone). @returns {boolean} */
  get finalStateUnknown() {
    return this.context.finalStateUnknown;
  }
}

/**
 * An add (`onAdd`) or delete (`onDelete`) notification: a context and the
 * object.
 */
export class Event extends Notification {
  #object;

  /**
   * An event from its parts; the host's calls build these, tests may too
   * (see also `testing.added`).
   *
   * @param {Context} context
   * @param {string} json The object as JSON text.
   */
  constructor(context, json) {
    super(context);
    /** The object as the JSON text the host sent. */
    this.json = json;
  }

  /**
   * The object, parsed from JSON on first use (then the same value each
   * time: do not mutate it if you read it twice). Throws a `HeraldError`
   * saying what failed if the text is not JSON.
   *
   * @returns {any}
   */
  get object() {
    this.#object ??= { value: parse(this.json, 'object') };
    return this.#object.value;
  }
}

/**
 * An update notification (`onUpdate`): a context and the old and new states
 * (equal on a resync).
 */
export class Update extends Notification {
  #old;
  #new;

  /**
   * An update from its parts; the host's calls build these, tests may too
   * (see also `testing.updated`).
   *
   * @param {Context} context
   * @param {string} oldJson The previous state as JSON text.
   * @param {string} newJson The new state as JSON text.
   */
  constructor(context, oldJson, newJson) {
    super(context);
    /** The previous state as JSON text. */
    this.oldJson = oldJson;
    /** The new state as JSON text. */
    this.newJson = newJson;
  }

  /**
   * The previous state, parsed on first use.
   *
   * @returns {any}
   */
  get old() {
    this.#old ??= { value: parse(this.oldJson, 'old object') };
    return this.#old.value;
  }

  /**
   * The new state, parsed on first use.
   *
   * @returns {any}
   */
  get new() {
    this.#new ??= { value: parse(this.newJson, 'new object') };
    return this.#new.value;
  }
}
