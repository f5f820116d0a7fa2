/**
 * Which cluster (the `cluster` interface of world 0.6.0). A daemon may
 * watch several clusters, and the operator says which ones a plugin runs on
 * (`plugins.<name>.clusters`). Every notification comes from one cluster;
 * during its call, cache look-ups, `kube` calls and `events` go to that
 * cluster, so a plugin that only reacts where things happen needs nothing
 * from this module. One that acts across clusters reads `current()` and
 * `names()`, and runs part of a call against another of its clusters:
 *
 * ```js
 * const origin = cluster.current();
 * for (const other of cluster.names().filter((name) => name !== origin)) {
 *   cluster.within(other, () => new kube.Api(ConfigMap, { namespace: 'shop' }).apply('settings', copy));
 * }
 * ```
 *
 * Each look-up, call and Event is still checked against the plugin's
 * grants for the cluster it reaches.
 *
 * @module
 */

import { host } from './host.js';
import { HeraldError } from './errors.js';

/**
 * The cluster of the call under way (a DNS label such as `west`; the
 * default cluster's configured name, `default` unless the operator names
 * it): the notification's, or the one `within` runs against. In tests,
 * `testing.setCluster` sets it.
 *
 * @returns {string}
 */
export function current() {
  return host().clusterCurrent();
}

/**
 * The clusters this plugin is delivered notifications from, sorted.
 *
 * @returns {string[]}
 */
export function names() {
  return [...host().clusterNames()];
}

/**
 * Runs `work` with `name` as the cluster of its look-ups, calls and Events,
 * then goes back to the call's cluster (also when `work` throws), and
 * returns what `work` returned. `name` must be one of `names()`: another
 * throws a `HeraldError` before `work` runs.
 *
 * @template T
 * @param {string} name
 * @param {() => T} work
 * @returns {T}
 */
export function within(name, work) {
  try {
    host().clusterTarget(name);
  } catch (refused) {
    throw new HeraldError(String(refused?.payload ?? refused));
  }
  try {
    return work();
  } finally {
    host().clusterTarget(undefined);
  }
}
