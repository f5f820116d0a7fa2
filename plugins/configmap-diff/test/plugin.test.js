import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KubeError } from '@herald/sdk';
import * as testing from '@herald/sdk/testing';
import ConfigMapDiff from '../src/plugin.js';

function configMap(data, { binaryData, resourceVersion = '1', labels } = {}) {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'web', namespace: 'shop', resourceVersion, ...(labels && { labels }) },
    ...(data && { data }),
    ...(binaryData && { binaryData }),
  };
}

function start(config) {
  testing.reset();
  if (config !== undefined) {
    testing.setConfig(config);
  }
  return new ConfigMapDiff();
}

test('subscribes to ConfigMaps, in one namespace if configured', () => {
  testing.reset();
  assert.deepEqual(testing.manifestOf(ConfigMapDiff), {
    name: 'configmap-diff',
    version: '0.1.0',
    subscriptions: [
      {
        kind: { group: '', version: 'v1', kind: 'ConfigMap' },
        namespace: undefined,
        labelSelector: undefined,
        fieldSelector: undefined,
        resyncPeriodMs: undefined,
        delivery: 'every-event',
      },
    ],
    limits: { callDeadlineMs: undefined, memoryBytes: undefined },
    capabilities: [],
    writes: [],
    metrics: [],
    indexes: [],
  });
  testing.setConfig({ namespace: 'shop' });
  assert.equal(testing.manifestOf(ConfigMapDiff).subscriptions[0].namespace, 'shop');
  testing.setConfig({ recordEvents: true });
  assert.deepEqual(testing.manifestOf(ConfigMapDiff).capabilities, ['events'], 'recordEvents asks for the events capability');
  assert.deepEqual(testing.manifestOf(ConfigMapDiff).writes, []);
});

test('without recordEvents no event is recorded', () => {
  const plugin = start();
  testing.enforce(ConfigMapDiff);
  plugin.onUpdate(testing.updated(configMap({ a: '1' }), configMap({ a: '2' })));
  assert.deepEqual(testing.takeEvents(), []);
});

test('recordEvents records each logged change as a Normal Event on the ConfigMap', () => {
  const plugin = start({ recordEvents: true });
  testing.enforce(ConfigMapDiff);
  plugin.onUpdate(testing.updated(configMap({ LEVEL: 'info' }), configMap({ LEVEL: 'debug' }, { resourceVersion: '2' })));
  plugin.onUpdate(testing.resynced(configMap({ LEVEL: 'debug' })));
  plugin.onUpdate(testing.updated(configMap({ a: '1' }), configMap({ a: '1' }, { labels: { team: 'web' } })));
  assert.deepEqual(testing.takeEvents(), [
    {
      regarding: { kind: { group: '', version: 'v1', kind: 'ConfigMap' }, namespace: 'shop', name: 'web', uid: undefined, resourceVersion: '2' },
      related: undefined,
      eventType: 'normal',
      reason: 'DataChanged',
      action: 'DataChanged',
      note: 'data changed: ~LEVEL="info"→"debug"',
    },
  ]);
  assert.deepEqual(testing.takeKubeCalls(), []);
});

test('an event the host refuses is logged and the call still succeeds', async () => {
  start({ recordEvents: true });
  testing.scriptEvents({ throws: new KubeError('too-many-requests', 'event rate limit'), times: 1 });
  const result = await testing.dispatch(ConfigMapDiff, testing.updated(configMap({ a: '1' }), configMap({ a: '2' })));
  assert.deepEqual(result, { tag: 'ok', val: undefined });
  assert.deepEqual(testing.takeLogs(), [
    { level: 'info', message: 'changed configmap=shop/web ~a="1"→"2"' },
    { level: 'error', message: 'could not record the event configmap=shop/web error=too-many-requests: event rate limit' },
  ]);
});

test('a change logs added, changed and removed keys on one line', () => {
  const plugin = start();
  plugin.onUpdate(
    testing.updated(configMap({ LEVEL: 'info', OLD: 'x', SAME: 's' }), configMap({ LEVEL: 'debug', NEW: 'on', SAME: 's' })),
  );
  assert.deepEqual(testing.takeLogs(), [{ level: 'info', message: 'changed configmap=shop/web +NEW="on" ~LEVEL="info"→"debug" -OLD' }]);
});

test('long values are cut and quoted so a line stays one line', () => {
  const plugin = start({ maxValueLength: 8 });
  plugin.onUpdate(testing.updated(configMap({ script: 'short' }), configMap({ script: 'echo "hello"\necho world' })));
  assert.deepEqual(testing.takeMessages(), ['changed configmap=shop/web ~script="short"→"echo \\"he…(23 chars)"']);
});

test('binaryData is reported by size, never by content', () => {
  const plugin = start();
  plugin.onUpdate(
    testing.updated(
      configMap({ a: '1' }, { binaryData: { 'old.bin': 'AAAA', 'cert.der': 'AAECAw==' } }),
      configMap({ a: '1' }, { binaryData: { 'cert.der': 'AAECAwQ=', 'key.bin': 'AAECAwQFBgc=' } }),
    ),
  );
  assert.deepEqual(testing.takeMessages(), ['changed configmap=shop/web +key.bin=<8 bytes> ~cert.der=<4 bytes>→<5 bytes> -old.bin']);
});

test('resyncs and updates that leave the data alone log nothing', () => {
  const plugin = start();
  plugin.onUpdate(testing.resynced(configMap({ a: '1' })));
  plugin.onUpdate(testing.updated(configMap({ a: '1' }), configMap({ a: '1' }, { labels: { team: 'web' }, resourceVersion: '2' })));
  assert.deepEqual(testing.takeMessages(), []);
});

test('many changes are counted past maxEntries', () => {
  const plugin = start({ maxEntries: 2 });
  plugin.onUpdate(testing.updated(configMap({}), configMap({ a: '1', b: '2', c: '3', d: '4' })));
  assert.deepEqual(testing.takeMessages(), ['changed configmap=shop/web +a="1" +b="2" …2 more']);
});

test('creations and deletions log key counts; the initial list only at debug level', () => {
  const plugin = start();
  plugin.onAdd(testing.listed(configMap({ a: '1' })));
  plugin.onAdd(testing.added(configMap({ a: '1', b: '2' }, { binaryData: { c: 'AA==' } })));
  plugin.onDelete(testing.deleted(configMap({ a: '1' })));
  plugin.onDelete(testing.vanished(configMap(undefined)));
  assert.deepEqual(testing.takeLogs(), [
    { level: 'debug', message: 'listed configmap=shop/web keys=1' },
    { level: 'info', message: 'created configmap=shop/web keys=2 binary=1' },
    { level: 'info', message: 'deleted configmap=shop/web keys=1' },
    { level: 'info', message: 'deleted configmap=shop/web keys=0 final-state-unknown' },
  ]);
});

test('a bad configuration fails each call with a message saying what is wrong', async () => {
  testing.reset();
  testing.setConfig({ maxValueLength: 0 });
  assert.deepEqual(await testing.dispatch(ConfigMapDiff, testing.added(configMap({}))), {
    tag: 'err',
    val: 'configuration maxValueLength must be a positive whole number, got 0',
  });
  testing.setConfig({ recordEvents: 'yes' });
  assert.deepEqual(await testing.dispatch(ConfigMapDiff, testing.added(configMap({}))), {
    tag: 'err',
    val: 'configuration recordEvents must be true or false',
  });
  testing.setConfig(['not', 'an', 'object']);
  assert.deepEqual(await testing.dispatch(ConfigMapDiff, testing.added(configMap({}))), {
    tag: 'err',
    val: 'the configuration must be an object',
  });
});
