/**
 * The glue between a plugin's default export and the component's exports
 * (`manifest`, 0.7.0's `delivery` interface and 0.5.0's `admission`
 * interface). `herald-build` generates an entry that calls
 * {@link bindPlugin}; `testing.dispatch` and `testing.replay` use the same
 * path. Not a public API.
 *
 * @module
 * @internal
 */

import { AdmissionReview, Mutation, Verdict, doesNotAdmit } from './admission.js';
import { messageOf } from './errors.js';
import { FrameReader } from './frame.js';
import { Handler } from './handler.js';
import { Manifest } from './manifest.js';

/**
 * Returns a function giving the one handler instance of `plugin`: a class
 * (constructed once, on first use) or an object with the handler methods.
 *
 * @param {unknown} plugin
 * @returns {() => Handler}
 */
export function instanceOf(plugin) {
  if (typeof plugin === 'function') {
    let instance;
    return () => {
      instance ??= new plugin();
      return instance;
    };
  }
  if (plugin !== null && typeof plugin === 'object' && typeof plugin.manifest === 'function') {
    return () => plugin;
  }
  throw new TypeError(
    'the plugin module must default-export a class extending Handler (or an object with manifest(), onAdd, onUpdate, onDelete)',
  );
}

function failure(thrown) {
  return { tag: 'err', val: messageOf(thrown) };
}

/**
 * Calls `method` of the handler: the WIT `result<T, string>` of the call,
 * `{tag: 'ok', val: answer(returned)}` (converting is part of the call, so
 * a value that does not convert is an err too) or `{tag: 'err', val:
 * message}` for a throw or a rejected promise. A handler without the method
 * answers `missing()`.
 *
 * @param {() => any} instance
 * @param {string} method
 * @param {unknown} argument
 * @param {{answer?: (returned: any) => any, missing?: () => object}} [how]
 */
function call(instance, method, argument, { answer = () => undefined, missing = () => ({ tag: 'ok', val: undefined }) } = {}) {
  let returned;
  try {
    const handler = instance();
    const fn = handler[method];
    if (fn === undefined) {
      return missing();
    }
    if (typeof fn !== 'function') {
      return failure(new TypeError(`the plugin's ${method} is not a function`));
    }
    returned = fn.call(handler, argument);
  } catch (thrown) {
    return failure(thrown);
  }
  const settle = (value) => {
    try {
      return { tag: 'ok', val: answer(value) };
    } catch (thrown) {
      return failure(thrown);
    }
  };
  if (returned !== null && typeof returned === 'object' && typeof returned.then === 'function') {
    return Promise.resolve(returned).then(settle, failure);
  }
  return settle(returned);
}

/** `returned` as the record of `type`, or a TypeError naming what `method` must return. */
function recordOf(type, method) {
  return (returned) => {
    if (!(returned instanceof type)) {
      throw new TypeError(`${method}() must return a ${type.name}, got ${returned === null ? 'null' : typeof returned}`);
    }
    return returned.toRecord();
  };
}

/**
 * Calls the decision `method` (`validate` or `mutate`) on the review record;
 * a plugin without it (`name` in the message) does not admit.
 */
function decide(instance, name, method, record, type) {
  const missing = () => failure(doesNotAdmit(name, method));
  let review;
  try {
    review = new AdmissionReview(record);
  } catch (thrown) {
    return failure(thrown);
  }
  return call(instance, method, review, { answer: recordOf(type, method), missing });
}

/** The largest `u32`, the most `maxBatch` can ask for. */
const U32_MAX = 0xffff_ffff;

/**
 * The delivery options `plugin` declares, as the WIT `delivery-options`
 * record: `oldState` (default `true`) and `maxBatch` (default 1), static
 * properties of a class (`Handler` declares the defaults) or properties of
 * an object plugin. A `TypeError` names a value the contract cannot carry.
 *
 * @param {unknown} plugin The plugin module's default export.
 * @returns {{oldState: boolean, maxBatch: number}}
 */
export function deliveryOptions(plugin) {
  const oldState = plugin?.oldState ?? true;
  const maxBatch = plugin?.maxBatch ?? 1;
  if (typeof oldState !== 'boolean') {
    throw new TypeError(`the plugin's oldState must be true or false, got ${typeof oldState} ${String(oldState)}`);
  }
  if (!Number.isInteger(maxBatch) || maxBatch < 1 || maxBatch > U32_MAX) {
    throw new TypeError(`the plugin's maxBatch must be a whole number from 1 to ${U32_MAX}, got ${String(maxBatch)}`);
  }
  return { oldState, maxBatch };
}

/** The `ok` of `deliver`: every notification handled. */
const DELIVERED = Object.freeze({ tag: 'ok', val: undefined });

/** The `err` of `deliver`: the notification at `index` failed with `thrown`; those after it were not handled. */
function failedAt(index, thrown) {
  return { tag: 'err', val: { index, message: messageOf(thrown) } };
}

/**
 * Hands the notifications of `reader`, from the one at `index` on, to the
 * handler, in order: `{tag: 'ok'}` once every one is handled, or at the
 * first that throws, rejects or cannot be read, `{tag: 'err', val: {index,
 * message}}` (the WIT `result<_, failure>`), leaving the rest unhandled. A
 * handler returning a promise is awaited before the next notification, so
 * the answer is then a promise too; handlers that return none are called
 * one after the other without one.
 *
 * @param {() => any} instance
 * @param {FrameReader} reader
 * @param {number} index The index of the next notification.
 */
function deliverFrom(instance, reader, index) {
  for (; ; index++) {
    let returned;
    try {
      const notification = reader.next();
      if (notification === undefined) {
        return DELIVERED;
      }
      const method = reader.method;
      const handler = instance();
      const fn = handler[method];
      if (fn === undefined) {
        continue;
      }
      if (typeof fn !== 'function') {
        throw new TypeError(`the plugin's ${method} is not a function`);
      }
      returned = fn.call(handler, notification);
    } catch (thrown) {
      return failedAt(index, thrown);
    }
    if (returned !== null && typeof returned === 'object' && typeof returned.then === 'function') {
      const at = index;
      return Promise.resolve(returned).then(
        () => deliverFrom(instance, reader, at + 1),
        (thrown) => failedAt(at, thrown),
      );
    }
  }
}

/**
 * The component's exports for `plugin`. Its delivery options are read (and
 * checked) here, once: in a built component, when the component is built.
 *
 * @param {unknown} plugin The plugin module's default export.
 * @returns {{manifest: () => object, delivery: {options: () => {oldState: boolean, maxBatch: number}, deliver: (frame: Uint8Array) => object}, admission: {declare: Function, validate: Function, mutate: Function}}}
 */
export function bindPlugin(plugin) {
  const instance = instanceOf(plugin);
  const options = deliveryOptions(plugin);
  const name = typeof plugin === 'function' ? plugin.name : 'its default export';
  const manifestOf = () => {
    const manifest = instance().manifest();
    if (!(manifest instanceof Manifest)) {
      throw new TypeError('manifest() must return a Manifest, e.g. new Manifest("name", "0.1.0")');
    }
    return manifest;
  };
  return {
    manifest() {
      return manifestOf().toRecord();
    },
    delivery: {
      options() {
        return { ...options };
      },
      deliver(frame) {
        let reader;
        try {
          reader = new FrameReader(frame);
        } catch (thrown) {
          return failedAt(0, thrown);
        }
        return deliverFrom(instance, reader, 0);
      },
    },
    admission: {
      declare() {
        return manifestOf().webhooksRecord();
      },
      validate(review) {
        return decide(instance, name, 'validate', review, Verdict);
      },
      mutate(review) {
        return decide(instance, name, 'mutate', review, Mutation);
      },
    },
  };
}
