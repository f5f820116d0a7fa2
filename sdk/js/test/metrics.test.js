// Metrics, indexes, requeues and the deadline through the fake host, and
// the definitions the host would refuse.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as testing from '../src/testing.js';
import { Index, Manifest, Metric, Subscription, cache, deadline, kinds, metrics, workqueue } from '../src/index.js';

const MANIFEST = new Manifest('m', '1')
  .subscribe(Subscription.to(kinds.Pod))
  .metric(Metric.counter('alerts_total', 'Alerts').labels('namespace'))
  .metric(Metric.gauge('stuck', 'Stuck'))
  .metric(Metric.histogram('took_seconds', 'Took').buckets(0.5, 2));

test('the manifest record carries the metric and index definitions', () => {
  const record = new Manifest('m', '1')
    .subscribe(Subscription.to(kinds.ReplicaSet))
    .metric(Metric.histogram('took_seconds', 'Took').labels('phase').buckets(0.5, 2))
    .index(Index.byOwner('owner', kinds.ReplicaSet))
    .index(Index.byLabel('app', kinds.ReplicaSet, 'app'))
    .index(Index.byField('node', { group: 'apps', version: 'v1', kind: 'ReplicaSet' }, 'spec.nodeName'))
    .toRecord();
  assert.deepEqual(record.metrics, [
    { name: 'took_seconds', help: 'Took', kind: 'histogram', labelNames: ['phase'], buckets: Float64Array.from([0.5, 2]) },
  ]);
  const replicaSet = { group: 'apps', version: 'v1', kind: 'ReplicaSet' };
  assert.deepEqual(record.indexes, [
    { name: 'owner', kind: replicaSet, by: { tag: 'owner' } },
    { name: 'app', kind: replicaSet, by: { tag: 'label', val: 'app' } },
    { name: 'node', kind: replicaSet, by: { tag: 'field', val: 'spec.nodeName' } },
  ]);
});

test('updates are summed per series', () => {
  testing.reset();
  testing.declare(MANIFEST);
  metrics.counter('alerts_total').with('shop').inc();
  metrics.counter('alerts_total').with('shop').add(2);
  metrics.counter('alerts_total').with('blog').inc();
  metrics.gauge('stuck').set(3);
  metrics.gauge('stuck').dec();
  metrics.gauge('stuck').add(0.5);
  metrics.histogram('took_seconds').observe(0.25);
  metrics.histogram('took_seconds').observe(4);
  assert.equal(testing.metric('alerts_total', 'shop'), 3);
  assert.equal(testing.metric('alerts_total', 'blog'), 1);
  assert.equal(testing.metric('stuck'), 2.5);
  assert.deepEqual(testing.observations('took_seconds'), [0.25, 4]);
  assert.deepEqual(testing.metrics(), [
    ['alerts_total', ['shop'], 3],
    ['alerts_total', ['blog'], 1],
    ['stuck', [], 2.5],
  ]);
  assert.deepEqual(testing.takeMetricUpdates().slice(0, 2), [
    { op: 'add', name: 'alerts_total', labelValues: ['shop'], value: 1 },
    { op: 'add', name: 'alerts_total', labelValues: ['shop'], value: 2 },
  ]);
  assert.deepEqual(testing.metricUpdates(), []);
  assert.deepEqual(testing.takeMessages(), []);
});

test('updates the host would drop are recorded, not counted, and logged', () => {
  testing.reset();
  testing.declare(MANIFEST);
  metrics.counter('alerts_total').inc();
  metrics.counter('alerts_total').with('shop').add(-1);
  metrics.gauge('stuck').with('x').set(1);
  metrics.histogram('stuck').observe(1);
  metrics.counter('other_total').inc();
  metrics.gauge('stuck').set(Number.NaN);
  assert.deepEqual(testing.metrics(), []);
  assert.equal(testing.metricUpdates().length, 6);
  assert.deepEqual(testing.takeMessages(), [
    'metric update dropped: metric alerts_total: 0 label values for 1 labels',
    'metric update dropped: metric alerts_total: a counter cannot go down (-1)',
    'metric update dropped: metric stuck: 1 label values for 0 labels',
    'metric update dropped: metric stuck: observe on a gauge',
    'metric update dropped: metric other_total is not defined in the manifest',
    'metric update dropped: metric stuck: NaN',
  ]);
});

test('definitions the host refuses are reported', () => {
  const cases = [
    [Metric.counter('alerts', 'A'), 'counter "alerts" must end in _total'],
    [Metric.gauge('bad-name', 'A'), 'metric name "bad-name" is not [a-zA-Z_][a-zA-Z0-9_]*'],
    [Metric.gauge('g', 'A').labels('plugin'), 'metric "g": label name "plugin" is reserved'],
    [Metric.histogram('h', 'A').labels('le'), 'metric "h": label name "le" is reserved'],
    [Metric.gauge('g', 'A').labels('a', 'a'), 'metric "g": label "a" twice'],
    [Metric.histogram('h', 'A').buckets(2, 1), 'histogram "h": buckets must be strictly increasing'],
  ];
  for (const [metric, problem] of cases) {
    assert.equal(metric.problem(), problem);
    const manifest = new Manifest('m', '1').subscribe(Subscription.to(kinds.Pod)).metric(metric);
    assert.deepEqual(manifest.problems(), [problem]);
    assert.throws(() => testing.declare(manifest), /the host would not load this plugin/);
  }
  const manifest = new Manifest('m', '1')
    .subscribe(Subscription.to(kinds.Pod))
    .metric(Metric.gauge('g', 'G'))
    .metric(Metric.gauge('g', 'G'))
    .index(Index.byOwner('owner', kinds.ReplicaSet))
    .index(Index.byLabel('app', kinds.Pod, 'app'))
    .index(Index.byLabel('app', kinds.Pod, 'tier'));
  assert.deepEqual(manifest.problems(), [
    'metric g is defined twice',
    'index "owner" is of apps/v1/ReplicaSet, which it does not subscribe to',
    'index "app" is declared twice',
  ]);
  assert.throws(() => new Manifest('m', '1').metric('alerts_total'), /metric\(\) takes a Metric/);
  assert.throws(() => new Index('x', kinds.Pod, 'label'), /names its key or path/);
});

test('indexes are served as the host files objects', () => {
  testing.reset();
  const replicaSet = (namespace, name, app, owner) => ({
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: { name, namespace, labels: { app }, ...(owner ? { ownerReferences: [{ uid: owner }] } : {}) },
    spec: { replicas: name === 'web-2' ? 3 : 1 },
  });
  testing.cacheInsert(replicaSet('shop', 'web-2', 'web', 'u-1'));
  testing.cacheInsert(replicaSet('shop', 'web-1', 'web', 'u-1'));
  testing.cacheInsert(replicaSet('blog', 'web-3', 'web', 'u-2'));
  testing.cacheInsert(replicaSet('shop', 'db-1', 'db'));
  assert.throws(() => cache.byIndex('owner', 'u-1'), /no index named "owner/);
  testing.declare(
    new Manifest('rollouts', '1')
      .subscribe(Subscription.to(kinds.ReplicaSet))
      .index(Index.byOwner('owner', kinds.ReplicaSet))
      .index(Index.byLabel('app', kinds.ReplicaSet, 'app'))
      .index(Index.byField('replicas', kinds.ReplicaSet, 'spec.replicas')),
  );
  const names = (found) => found.map((object) => object.metadata.name);
  assert.deepEqual(names(cache.byIndex('owner', 'u-1')), ['web-1', 'web-2']);
  assert.deepEqual(names(cache.byIndex('owner', 'u-2', 'shop')), []);
  assert.deepEqual(names(cache.byIndex('app', 'web')), ['web-3', 'web-1', 'web-2']);
  assert.deepEqual(names(cache.byIndex('replicas', '3')), ['web-2']);
  assert.equal(cache.byIndexJson('app', 'web', 'shop').length, 2);
});

test('requeues are recorded in milliseconds and the deadline is what the test sets', () => {
  testing.reset();
  workqueue.requeueAfter(30_000);
  workqueue.requeueAfter(1500n);
  assert.deepEqual(testing.requeues(), [30_000, 1500]);
  assert.deepEqual(testing.takeRequeues(), [30_000, 1500]);
  assert.deepEqual(testing.requeues(), []);
  assert.equal(deadline.remainingMs(), 1000);
  testing.setRemainingMs(20);
  assert.equal(deadline.remainingMs(), 20);
  testing.reset();
  assert.equal(deadline.remainingMs(), 1000);
});
