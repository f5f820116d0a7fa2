/**
 * World 0.7.0's delivery frames: one or more notifications in one list of
 * bytes (the layout `wit/herald.wit` documents on `delivery`). The reader
 * walks a frame one notification at a time, checking only the lengths it
 * needs to find the next one; each notification becomes an `Event` or
 * `Update` over the frame's bytes, which decodes its strings and its
 * objects only when the handler reads them. The writer makes frames as
 * the host does, for the fake host (`testing.dispatch`, `testing.replay`)
 * and tests. Not a public API.
 *
 * @module
 * @internal
 */

import { HeraldError } from './errors.js';
import { Event, FramedContext, Update, u32 } from './event.js';

/** What happened, the first byte of a notification: an add. */
export const ADDED = 0;
/** An update. */
export const UPDATED = 1;
/** A delete. */
export const DELETED = 2;

/** The flags byte: a synthetic add replaying the cache (`isInitialList`). */
export const INITIAL_LIST = 1;
/** A periodic resync (`isResync`). */
export const RESYNC = 2;
/** A delete inferred from a relist (`finalStateUnknown`). */
export const FINAL_STATE_UNKNOWN = 4;
/** The old state follows the object (an update, to a plugin that asked for it). */
export const OLD_STATE = 8;

const KNOWN_FLAGS = INITIAL_LIST | RESYNC | FINAL_STATE_UNKNOWN | OLD_STATE;

/** A notification's head: what, flags, two zero bytes, seven `u32` lengths. */
const HEAD_BYTES = 32;

/** The handler method each `what` goes to. */
const METHODS = ['onAdd', 'onUpdate', 'onDelete'];

/**
 * A frame that does not follow the layout: its message, which the host
 * records as the failure's, says where.
 */
export class FrameError extends HeraldError {
  /** @param {string} problem What is wrong, and where. */
  constructor(problem) {
    super(`malformed delivery frame: ${problem}`);
    this.name = 'FrameError';
  }
}

/**
 * Reads a frame's notifications in order: {@link FrameReader#next} gives
 * each (and sets {@link FrameReader#method} to the handler method it goes
 * to), `undefined` after the last, and throws a {@link FrameError} where
 * the frame stops making sense, so the notifications before that point are
 * read (and handled) first.
 */
export class FrameReader {
  #bytes;
  #at = 4;
  #left;

  /** @param {Uint8Array} frame The frame as the host sent it. */
  constructor(frame) {
    // Not `instanceof`: the component's bindings make the frame's array in
    // another realm, whose Uint8Array is not this module's.
    if (Object.prototype.toString.call(frame) !== '[object Uint8Array]') {
      throw new TypeError(`a delivery frame is a Uint8Array, got ${frame === null ? 'null' : typeof frame}`);
    }
    this.#bytes = frame;
    // A frame too short for its count reads as one notification, whose
    // reading says where the frame ends.
    this.#left = frame.length < 4 ? -1 : u32(frame, 0);
    /** The handler method of the notification {@link FrameReader#next} returned last. */
    this.method = '';
  }

  /** The `u32` at `at`, or a FrameError if the frame ends inside it. */
  #u32(at) {
    if (at + 4 > this.#bytes.length) {
      throw new FrameError(`the frame ends at byte ${this.#bytes.length} inside the old state's length`);
    }
    return u32(this.#bytes, at);
  }

  /** `at` moved past a field of `length` bytes, or a FrameError if the field runs past the end. */
  #past(at, length) {
    const end = at + length;
    if (end > this.#bytes.length) {
      throw new FrameError(`a field of ${length} bytes at byte ${at} runs past the frame's end (${this.#bytes.length} bytes)`);
    }
    return end;
  }

  /**
   * The next notification: an `Event` (add or delete) or an `Update`;
   * `undefined` after the last one.
   *
   * @returns {Event | Update | undefined}
   */
  next() {
    const bytes = this.#bytes;
    if (this.#left === -1) {
      this.#left = 0;
      this.#at = bytes.length;
      throw new FrameError(`the frame ends at byte ${bytes.length} inside its count`);
    }
    if (this.#left === 0) {
      if (this.#at !== bytes.length) {
        const extra = bytes.length - this.#at;
        this.#at = bytes.length;
        throw new FrameError(`${extra} bytes follow its last notification`);
      }
      return undefined;
    }
    this.#left -= 1;
    const start = this.#at;
    if (start + HEAD_BYTES > bytes.length) {
      throw new FrameError(`the frame ends at byte ${bytes.length} inside the head of a notification at byte ${start}`);
    }
    const what = bytes[start];
    const flags = bytes[start + 1];
    if ((flags & ~KNOWN_FLAGS) !== 0 || bytes[start + 2] !== 0 || bytes[start + 3] !== 0) {
      const hex = [...bytes.subarray(start + 1, start + 4)].map((byte) => byte.toString(16).padStart(2, '0'));
      throw new FrameError(`unknown flags ${hex.join(' ')} (a newer host?)`);
    }
    if (what > DELETED) {
      throw new FrameError(`unknown notification type ${what} (a newer host?)`);
    }
    // The seven fields end where their lengths add up to; only when that
    // is past the frame's end is each one checked, to say which.
    let at = start + HEAD_BYTES;
    const fields = at;
    for (let length = start + 4; length < fields; length += 4) {
      at += u32(bytes, length);
    }
    if (at > bytes.length) {
      at = fields;
      for (let length = start + 4; length < fields; length += 4) {
        at = this.#past(at, u32(bytes, length));
      }
    }
    let old = -1;
    if ((flags & OLD_STATE) !== 0) {
      old = at;
      at = this.#past(at + 4, this.#u32(at));
    }
    this.#at = at;
    this.method = METHODS[what];
    const context = new FramedContext(bytes, start, old);
    return what === UPDATED ? new Update(context, undefined, undefined) : new Event(context, undefined);
  }
}

/**
 * One notification to write into a frame.
 *
 * @typedef {object} Written
 * @property {number} what {@link ADDED}, {@link UPDATED} or {@link DELETED}.
 * @property {import('./event.js').Context} context Its context (the flags come from it).
 * @property {string} json The object (for an update, the new state) as JSON text.
 * @property {string} [oldJson] For an update, the old state; left out, the frame carries none (flag 8 unset).
 */

/**
 * A frame of `notifications`, written as the host writes it.
 *
 * @param {Written[]} notifications
 * @returns {Uint8Array}
 */
export function write(notifications) {
  const encoder = new TextEncoder();
  const parts = [];
  let size = 4;
  for (const { what, context, json, oldJson } of notifications) {
    const fields = [
      context.kind.group,
      context.kind.version,
      context.kind.kind,
      context.resource,
      context.key,
      context.resourceVersion,
      json,
    ].map((text) => encoder.encode(text));
    const old = oldJson === undefined ? undefined : encoder.encode(oldJson);
    const flags =
      (context.isInitialList ? INITIAL_LIST : 0) |
      (context.isResync ? RESYNC : 0) |
      (context.finalStateUnknown ? FINAL_STATE_UNKNOWN : 0) |
      (old === undefined ? 0 : OLD_STATE);
    parts.push({ what, flags, fields, old });
    size += HEAD_BYTES + fields.reduce((sum, field) => sum + field.length, 0) + (old === undefined ? 0 : 4 + old.length);
  }
  const frame = new Uint8Array(size);
  const view = new DataView(frame.buffer);
  view.setUint32(0, notifications.length, true);
  let at = 4;
  for (const { what, flags, fields, old } of parts) {
    frame[at] = what;
    frame[at + 1] = flags;
    fields.forEach((field, index) => view.setUint32(at + 4 + 4 * index, field.length, true));
    at += HEAD_BYTES;
    for (const field of fields) {
      frame.set(field, at);
      at += field.length;
    }
    if (old !== undefined) {
      view.setUint32(at, old.length, true);
      frame.set(old, at + 4);
      at += 4 + old.length;
    }
  }
  return frame;
}
