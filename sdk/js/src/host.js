/**
 * Where the SDK's log, cache and config calls go: the real host's imports
 * inside a component (installed by the entry `herald-build` generates), or
 * the fake host of `@herald/sdk/testing` under `node --test`. Not a public
 * API.
 *
 * @module
 * @internal
 */

/**
 * The host imports the SDK needs, in the shapes the component bindings give
 * them (`herald:plugin/log`, `cache` and `config`).
 *
 * @typedef {object} HostImports
 * @property {(level: string, message: string) => void} log
 * @property {(kind: {group: string, version: string, kind: string}, namespace: string | undefined, name: string) => string | undefined} cacheGet
 *   Throws `{payload: {tag, val}}` for a cache error.
 * @property {(kind: {group: string, version: string, kind: string}, namespace: string | undefined, labelSelector: string | undefined) => string[]} cacheList
 *   Throws `{payload: {tag, val}}` for a cache error.
 * @property {() => string | undefined} configGet
 */

const NO_HOST_MESSAGE =
  'no Herald host: inside a component `herald-build` connects the real one; ' +
  "in tests, import '@herald/sdk/testing' to use the fake host";

/** @type {HostImports} */
const UNBOUND = {
  log() {
    throw new Error(NO_HOST_MESSAGE);
  },
  cacheGet() {
    throw new Error(NO_HOST_MESSAGE);
  },
  cacheList() {
    throw new Error(NO_HOST_MESSAGE);
  },
  configGet() {
    throw new Error(NO_HOST_MESSAGE);
  },
};

let current = UNBOUND;

/**
 * Routes the SDK's host calls to `imports` from now on.
 *
 * @param {HostImports} imports
 */
export function installHost(imports) {
  for (const name of ['log', 'cacheGet', 'cacheList', 'configGet']) {
    if (typeof imports?.[name] !== 'function') {
      throw new TypeError(`installHost: ${name} must be a function`);
    }
  }
  current = imports;
}

/**
 * The host calls go to.
 *
 * @returns {HostImports}
 */
export function host() {
  return current;
}
