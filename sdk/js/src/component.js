/**
 * The glue between a plugin's default export and the component's exports
 * (`manifest`, the `handler` interface and 0.5.0's `admission` interface).
 * `herald-build` generates an entry that calls {@link bindPlugin};
 * `testing.dispatch` uses the same path. Not a public API.
 *
 * @module
 * @internal
 */

import { AdmissionReview, Mutation, Verdict, doesNotAdmit } from './admission.js';
import { messageOf } from './errors.js';
import { Context, Event, Update } from './event.js';
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

/**
 * The component's exports for `plugin`.
 *
 * @param {unknown} plugin The plugin module's default export.
 * @returns {{manifest: () => object, handler: {onAdd: Function, onUpdate: Function, onDelete: Function}, admission: {declare: Function, validate: Function, mutate: Function}}}
 */
export function bindPlugin(plugin) {
  const instance = instanceOf(plugin);
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
    handler: {
      onAdd(context, json) {
        return call(instance, 'onAdd', new Event(new Context(context), json));
      },
      onUpdate(context, oldJson, newJson) {
        return call(instance, 'onUpdate', new Update(new Context(context), oldJson, newJson));
      },
      onDelete(context, json) {
        return call(instance, 'onDelete', new Event(new Context(context), json));
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
