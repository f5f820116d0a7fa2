/**
 * Where the SDK's host calls go (log, cache and index, config, kube, events,
 * metrics, workqueue, deadline): the real host's imports
 * inside a component (installed by the entry `herald-build` generates), or
 * the fake host of `@herald/sdk/testing` under `node --test`. Not a public
 * API.
 *
 * @module
 * @internal
 */

/**
 * The host imports the SDK needs, in the shapes the component bindings give
 * them (`herald:plugin/log`, `cache`, `config`, `kube` and `events`).
 *
 * @typedef {object} HostImports
 * @property {(level: string, message: string) => void} log
 * @property {(kind: {group: string, version: string, kind: string}, namespace: string | undefined, name: string) => string | undefined} cacheGet
 *   Throws `{payload: {tag, val}}` for a cache error.
 * @property {(kind: {group: string, version: string, kind: string}, namespace: string | undefined, labelSelector: string | undefined) => string[]} cacheList
 *   Throws `{payload: {tag, val}}` for a cache error.
 * @property {() => string | undefined} configGet
 * @property {(target: object) => string} kubeGet
 *   Each kube and events call throws `{payload: {tag, val}}` for a `kube-error`.
 * @property {(kind: object, namespace: string | undefined, object: string) => string} kubeCreate
 * @property {(target: object, object: string) => string} kubeReplace
 * @property {(target: object, patchType: string, patch: string) => string} kubePatch
 * @property {(target: object, object: string, force: boolean) => string} kubeApply
 * @property {(target: object, options: object) => void} kubeDelete
 * @property {(event: object) => void} eventsPublish
 * @property {(name: string, value: string, namespace: string | undefined) => string[]} indexLookup
 *   Throws `{payload: {tag: 'unknown-index', val}}` for an index the manifest does not declare.
 * @property {(name: string, labelValues: string[], value: number) => void} metricsAdd
 * @property {(name: string, labelValues: string[], value: number) => void} metricsSet
 * @property {(name: string, labelValues: string[], value: number) => void} metricsObserve
 * @property {(delayMs: bigint) => void} requeueAfter
 * @property {() => bigint} remainingMs
 * @property {() => string} clusterCurrent
 * @property {() => string[]} clusterNames
 * @property {(name: string | undefined) => void} clusterTarget
 *   Throws `{payload: message}` for a cluster the plugin does not run on.
 */

/** The functions a host must provide. */
const IMPORTS = Object.freeze([
  'log',
  'cacheGet',
  'cacheList',
  'configGet',
  'kubeGet',
  'kubeCreate',
  'kubeReplace',
  'kubePatch',
  'kubeApply',
  'kubeDelete',
  'eventsPublish',
  'indexLookup',
  'metricsAdd',
  'metricsSet',
  'metricsObserve',
  'requeueAfter',
  'remainingMs',
  'clusterCurrent',
  'clusterNames',
  'clusterTarget',
]);

const NO_HOST_MESSAGE =
  'no Herald host: inside a component `herald-build` connects the real one; ' +
  "in tests, import '@herald/sdk/testing' to use the fake host";

/** @type {HostImports} */
const UNBOUND = /** @type {any} */ (
  Object.fromEntries(
    IMPORTS.map((name) => [
      name,
      () => {
        throw new Error(NO_HOST_MESSAGE);
      },
    ]),
  )
);

let current = UNBOUND;

/**
 * Routes the SDK's host calls to `imports` from now on.
 *
 * @param {HostImports} imports
 */
export function installHost(imports) {
  for (const name of IMPORTS) {
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
