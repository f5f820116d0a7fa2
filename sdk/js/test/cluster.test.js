// The cluster interface (world 0.6.0) through the fake host: the call's
// cluster, the plugin's clusters, and work run against another of them.
import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';
import * as testing from '../src/testing.js';
import { cluster, kinds, kube } from '../src/index.js';

beforeEach(() => testing.reset());

test('the fake host runs on the default cluster unless told otherwise', () => {
  assert.equal(cluster.current(), 'default');
  assert.deepEqual(cluster.names(), ['default']);
  testing.setClusters(['west', 'east']);
  assert.deepEqual(cluster.names(), ['east', 'west']);
  assert.equal(cluster.current(), 'west');
});

test('work runs against another cluster and the call goes back after it, even when it throws', () => {
  testing.setClusters(['east', 'west']);
  testing.setCluster('east');
  const seen = cluster.within('west', () => {
    assert.throws(() => new kube.Api(kinds.ConfigMap, { namespace: 'shop' }).get('settings'));
    return cluster.current();
  });
  assert.equal(seen, 'west');
  assert.equal(cluster.current(), 'east');
  assert.deepEqual(
    testing.takeKubeCalls().map((call) => call.cluster),
    ['west'],
  );
  assert.throws(() =>
    cluster.within('west', () => {
      throw new Error('the work failed');
    }),
  );
  assert.equal(cluster.current(), 'east');
});

test('a cluster the plugin does not run on is refused before the work runs', () => {
  testing.setClusters(['east', 'west']);
  assert.throws(
    () => cluster.within('north', () => assert.fail('ran')),
    /it may target only its own clusters \(east, west\)/,
  );
  assert.equal(cluster.current(), 'east');
});
