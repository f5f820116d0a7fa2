/**
 * The glue between a plugin's default export and the component's exports
 * (`manifest` and the `handler` interface). `herald-build` generates an
 * entry that calls {@link bindPlugin}; `testing.dispatch` uses the same
 * path. Not a public API.
 *
 * @module
 * @internal
 */

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

/** The WIT `result<_, string>` for a call that returned or threw. */
const OK = Object.freeze({ tag: 'ok', val: undefined });

function failure(thrown) {
  return { tag: 'err', val: messageOf(thrown) };
}

/**
 * Calls `method` of the handler; a throw or a rejected promise becomes
 * `{tag: 'err', val: message}`, anything else `{tag: 'ok'}`.
 */
function call(instance, method, argument) {
  let returned;
  try {
    const handler = instance();
    const fn = handler[method];
    if (fn === undefined) {
      return OK;
    }
    if (typeof fn !== 'function') {
      return failure(new TypeError(`the plugin's ${method} is not a function`));
    }
    returned = fn.call(handler, argument);
  } catch (thrown) {
    return failure(thrown);
  }
  if (returned !== null && typeof returned === 'object' && typeof returned.then === 'function') {
    return Promise.resolve(returned).then(() => OK, failure);
  }
  return OK;
}

/**
 * The component's exports for `plugin`.
 *
 * @param {unknown} plugin The plugin module's default export.
 * @returns {{manifest: () => object, handler: {onAdd: Function, onUpdate: Function, onDelete: Function}}}
 */
export function bindPlugin(plugin) {
  const instance = instanceOf(plugin);
  return {
    manifest() {
      const manifest = instance().manifest();
      if (!(manifest instanceof Manifest)) {
        throw new TypeError('manifest() must return a Manifest, e.g. new Manifest("name", "0.1.0")');
      }
      return manifest.toRecord();
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
  };
}
