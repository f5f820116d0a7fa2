/**
 * The notifications a handler receives: {@link Event} for adds and deletes,
 * {@link Update} for updates, both carrying a {@link Context}. Those the host
 * delivers are read in place from its delivery frame (world 0.7.0, see
 * `frame.js`): each string is decoded the first time it is read, each
 * object parsed the first time it is read.
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

// A notification of world 0.7.0's delivery frame (`frame.js` reads the
// frame): a head of what, flags, two zero bytes and seven u32 lengths, then
// the seven fields those lengths measure, in this order.
const HEAD_BYTES = 32;
const [GROUP, VERSION, KIND, RESOURCE, KEY, RESOURCE_VERSION, OBJECT] = [0, 1, 2, 3, 4, 5, 6];
// The flags byte.
const INITIAL_LIST = 1;
const RESYNC = 2;
const FINAL_STATE_UNKNOWN = 4;

/** The little-endian `u32` at `at` (the caller has checked it is in the frame). */
export function u32(bytes, at) {
  return (bytes[at] | (bytes[at + 1] << 8) | (bytes[at + 2] << 16) | (bytes[at + 3] << 24)) >>> 0;
}

let decoder;

/** The UTF-8 text of `bytes[start, end)`. */
function utf8(bytes, start, end) {
  decoder ??= new TextDecoder();
  return decoder.decode(bytes.subarray(start, end));
}

/**
 * A notification's context read in place from a delivery frame (world
 * 0.7.0): the same accessors as a {@link Context}, each string decoded from
 * the frame's bytes the first time it is read and kept, and the whole
 * `Context` built only when `context` is asked for, so a handler that reads
 * only the key decodes only the key. Built by the frame reader
 * (`frame.js`), which has checked that every field lies inside the frame.
 * Not a public API.
 *
 * @internal
 */
export class FramedContext {
  #bytes;
  #at;
  #old;
  #kind;
  #resource;
  #key;
  #resourceVersion;
  #context;

  /**
   * @param {Uint8Array} bytes The frame.
   * @param {number} at Where the notification starts (its `what` byte).
   * @param {number} old Where the old state's length is, or -1 without one.
   */
  constructor(bytes, at, old) {
    this.#bytes = bytes;
    this.#at = at;
    this.#old = old;
  }

  /** Field `index` (0 group, 1 version, 2 kind, 3 resource, 4 key, 5 resourceVersion, 6 object) as text. */
  field(index) {
    const bytes = this.#bytes;
    const lengths = this.#at + 4;
    let start = this.#at + HEAD_BYTES;
    for (let i = 0; i < index; i++) {
      start += u32(bytes, lengths + 4 * i);
    }
    return utf8(bytes, start, start + u32(bytes, lengths + 4 * index));
  }

  /** The flags byte. @returns {number} */
  get flags() {
    return this.#bytes[this.#at + 1];
  }

  /** The subscription's kind. @returns {GroupVersionKind} */
  get kind() {
    this.#kind ??= new GroupVersionKind(this.field(GROUP), this.field(VERSION), this.field(KIND));
    return this.#kind;
  }

  /** The plural resource name. @returns {string} */
  get resource() {
    this.#resource ??= this.field(RESOURCE);
    return this.#resource;
  }

  /** The object's key. @returns {string} */
  get key() {
    this.#key ??= this.field(KEY);
    return this.#key;
  }

  /** The (new) object's resourceVersion. @returns {string} */
  get resourceVersion() {
    this.#resourceVersion ??= this.field(RESOURCE_VERSION);
    return this.#resourceVersion;
  }

  /** Flag 1. @returns {boolean} */
  get isInitialList() {
    return (this.flags & INITIAL_LIST) !== 0;
  }

  /** Flag 2. @returns {boolean} */
  get isResync() {
    return (this.flags & RESYNC) !== 0;
  }

  /** Flag 4. @returns {boolean} */
  get finalStateUnknown() {
    return (this.flags & FINAL_STATE_UNKNOWN) !== 0;
  }

  /** The namespace part of the key. @returns {string | undefined} */
  get namespace() {
    const key = this.key;
    const slash = key.indexOf('/');
    return slash === -1 ? undefined : key.slice(0, slash);
  }

  /** The name part of the key. @returns {string} */
  get name() {
    const key = this.key;
    const slash = key.indexOf('/');
    return slash === -1 ? key : key.slice(slash + 1);
  }

  /** The whole context, built on first use. @returns {Context} */
  get context() {
    this.#context ??= new Context(this);
    return this.#context;
  }

  /** The (new) object's JSON text (not kept: the event keeps it). @returns {string} */
  objectJson() {
    return this.field(OBJECT);
  }

  /** Whether the frame carries the old state (flag 8). @returns {boolean} */
  hasOld() {
    return this.#old !== -1;
  }

  /** The old state's JSON text; `''` when the frame has none. @returns {string} */
  oldJson() {
    if (this.#old === -1) {
      return '';
    }
    const start = this.#old + 4;
    return utf8(this.#bytes, start, start + u32(this.#bytes, this.#old));
  }
}

/** Where a notification's context is: a {@link Context}, or a {@link FramedContext}. */
const HEAD = Symbol('head');

/** Accessors shared by {@link Event} and {@link Update}, forwarding to the context. */
class Notification {
  /** @param {Context | FramedContext} context */
  constructor(context) {
    if (!(context instanceof Context) && !(context instanceof FramedContext)) {
      throw new TypeError('a notification needs a Context');
    }
    this[HEAD] = context;
  }

  /** Everything the host said about this notification (built on first use for a delivered one). @returns {Context} */
  get context() {
    const head = this[HEAD];
    return head instanceof FramedContext ? head.context : head;
  }

  /** The subscription's kind. @returns {GroupVersionKind} */
  get kind() {
    return this[HEAD].kind;
  }

  /** The plural resource name, e.g. `pods`. @returns {string} */
  get resource() {
    return this[HEAD].resource;
  }

  /** The object's key: `namespace/name`, or `name` when cluster-scoped. @returns {string} */
  get key() {
    return this[HEAD].key;
  }

  /** The object's namespace; `undefined` when cluster-scoped. @returns {string | undefined} */
  get namespace() {
    return this[HEAD].namespace;
  }

  /** The object's name. @returns {string} */
  get name() {
    return this[HEAD].name;
  }

  /** The `metadata.resourceVersion` of the (new) object. @returns {string} */
  get resourceVersion() {
    return this[HEAD].resourceVersion;
  }

  /** Whether this is a synthetic add replaying the cache on join. @returns {boolean} */
  get isInitialList() {
    return this[HEAD].isInitialList;
  }

  /** Whether this is a periodic resync (old and new are equal). @returns {boolean} */
  get isResync() {
    return this[HEAD].isResync;
  }

  /** Whether this delete was inferred from a relist (a tombstone). @returns {boolean} */
  get finalStateUnknown() {
    return this[HEAD].finalStateUnknown;
  }
}

/**
 * An add (`onAdd`) or delete (`onDelete`) notification: a context and the
 * object. Delivered by the host, its text is decoded from the delivery
 * frame when first read, and parsed when `object` is first read.
 */
export class Event extends Notification {
  #json;
  #object;

  /**
   * An event from its parts; the component builds these from the host's
   * frames, tests may build them too (see also `testing.added`).
   *
   * @param {Context} context
   * @param {string} json The object as JSON text.
   */
  constructor(context, json) {
    super(context);
    this.#json = json;
  }

  /**
   * The object as the JSON text the host sent.
   *
   * @returns {string}
   */
  get json() {
    if (this.#json === undefined && this[HEAD] instanceof FramedContext) {
      this.#json = this[HEAD].objectJson();
    }
    return this.#json;
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
 * (equal on a resync). The old state is there unless the plugin declined it
 * (`static oldState = false` on its `Handler`). Delivered by the host, each
 * side's text is decoded from the delivery frame when first read, and
 * parsed when `old` or `new` is first read.
 */
export class Update extends Notification {
  #oldJson;
  #newJson;
  #old;
  #new;

  /**
   * An update from its parts; the component builds these from the host's
   * frames, tests may build them too (see also `testing.updated`).
   *
   * @param {Context} context
   * @param {string} oldJson The previous state as JSON text.
   * @param {string} newJson The new state as JSON text.
   */
  constructor(context, oldJson, newJson) {
    super(context);
    this.#oldJson = oldJson;
    this.#newJson = newJson;
  }

  /**
   * The previous state as JSON text; `''` when the plugin declined the old
   * state (`oldState = false`).
   *
   * @returns {string}
   */
  get oldJson() {
    if (this.#oldJson === undefined && this[HEAD] instanceof FramedContext) {
      this.#oldJson = this[HEAD].oldJson();
    }
    return this.#oldJson;
  }

  /**
   * The new state as JSON text.
   *
   * @returns {string}
   */
  get newJson() {
    if (this.#newJson === undefined && this[HEAD] instanceof FramedContext) {
      this.#newJson = this[HEAD].objectJson();
    }
    return this.#newJson;
  }

  /**
   * The previous state, parsed on first use. Throws a `HeraldError` when the
   * plugin declined the old state (`oldState = false`), so it was not
   * delivered.
   *
   * @returns {any}
   */
  get old() {
    if (this.#old === undefined) {
      const head = this[HEAD];
      if (head instanceof FramedContext && !head.hasOld()) {
        throw new HeraldError("the old state was not delivered: the plugin's oldState is false");
      }
      this.#old = { value: parse(this.oldJson, 'old object') };
    }
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
