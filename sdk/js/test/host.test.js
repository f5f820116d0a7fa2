// Runs without the fake host (each test file is its own process under
// node --test): what a plugin sees with no host, and how the SDK maps what
// the real host's imports return and throw.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CacheError, KubeError, cache, cluster, config, deadline, events, kube, log, metrics, workqueue } from '../src/index.js';
import { installHost } from '../src/host.js';

test('without a host every call says how to get one', () => {
  assert.throws(() => log.info('x'), /no Herald host: .* import '@herald\/sdk\/testing'/);
  assert.throws(() => config.get(), /no Herald host/);
});

/** A host whose kube and events imports fail the test if called. */
const UNUSED = Object.fromEntries(
  ['kubeGet', 'kubeCreate', 'kubeReplace', 'kubePatch', 'kubeApply', 'kubeDelete', 'eventsPublish'].map((name) => [
    name,
    () => assert.fail(`${name} called`),
  ]),
);

/** The 0.3.0, 0.4.0 and 0.6.0 imports, failing the test if called. */
const UNUSED_NEWER = Object.fromEntries(
  [
    'indexLookup',
    'metricsAdd',
    'metricsSet',
    'metricsObserve',
    'requeueAfter',
    'remainingMs',
    'clusterCurrent',
    'clusterNames',
    'clusterTarget',
  ].map((name) => [
    name,
    () => assert.fail(`${name} called`),
  ]),
);

test("the host's cache errors and undecodable objects become CacheErrors", () => {
  const calls = [];
  installHost({
    ...UNUSED,
    ...UNUSED_NEWER,
    log: (level, message) => calls.push([level, message]),
    configGet: () => null,
    cacheGet: (kind, namespace, name) => {
      calls.push(['get', kind, namespace, name]);
      if (kind.kind === 'Secret') {
        throw { payload: { tag: 'not-subscribed', val: kind } };
      }
      return 'not json';
    },
    cacheList: () => {
      throw { payload: { tag: 'invalid-selector', val: 'unexpected "="' } };
    },
  });
  assert.throws(
    () => cache.get({ group: 'example.com', version: 'v1', kind: 'Widget' }, 'n', 'w'),
    (error) => error instanceof CacheError && error.reason === 'decode' && /^decoding a cached example\.com\/v1\/Widget: /.test(error.message),
  );
  assert.throws(
    () => cache.get({ group: '', version: 'v1', kind: 'Secret' }, null, 's'),
    (error) => error instanceof CacheError && error.message === 'not subscribed to v1/Secret' && error.kind.kind === 'Secret',
  );
  assert.throws(
    () => cache.list({ group: '', version: 'v1', kind: 'Pod' }, undefined, 'a=b=c'),
    (error) => error.reason === 'invalid-selector' && error.message === 'invalid label selector: unexpected "="',
  );
  assert.deepEqual(calls[1], ['get', { group: '', version: 'v1', kind: 'Secret' }, undefined, 's']);
  assert.equal(config.get(), undefined, 'a null from the host is no configuration');
  log.warn('w');
  assert.deepEqual(calls.at(-1), ['warn', 'w']);
});

test('a host missing an import is refused', () => {
  assert.throws(() => installHost({ log() {} }), /installHost: cacheGet must be a function/);
  assert.throws(
    () => installHost({ log() {}, cacheGet() {}, cacheList() {}, configGet() {} }),
    /installHost: kubeGet must be a function/,
  );
});

test("the kube and events imports get the contract's records, and every kube-error case becomes a KubeError", () => {
  const calls = [];
  let refusal;
  const answer = (name) => (...args) => {
    calls.push([name, ...args]);
    if (refusal !== undefined) {
      throw { payload: refusal };
    }
    return name === 'kubeDelete' || name === 'eventsPublish' ? undefined : '{"kind":"Pod"}';
  };
  installHost({
    log() {},
    cacheGet() {},
    cacheList() {},
    configGet() {},
    ...UNUSED_NEWER,
    ...Object.fromEntries(Object.keys(UNUSED).map((name) => [name, answer(name)])),
  });
  const pods = new kube.Api({ group: '', version: 'v1', kind: 'Pod' }, { namespace: 'shop' });
  const pod = { group: '', version: 'v1', kind: 'Pod' };
  assert.deepEqual(pods.patchStatus('web-0', '{}', { type: 'strategic' }), { kind: 'Pod' });
  pods.delete('web-0', { uid: 'u', propagation: 'orphan' });
  new kube.Api('', 'v1', 'Namespace').create({ metadata: { name: 'team-a' } });
  events.warning({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'shop' } }, 'Bad', 'note');
  assert.deepEqual(calls, [
    ['kubePatch', { kind: pod, namespace: 'shop', name: 'web-0', subresource: 'status' }, 'strategic', '{}'],
    ['kubeDelete', { kind: pod, namespace: 'shop', name: 'web-0', subresource: undefined }, { uid: 'u', resourceVersion: undefined, propagation: 'orphan' }],
    ['kubeCreate', { group: '', version: 'v1', kind: 'Namespace' }, undefined, '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}}'],
    [
      'eventsPublish',
      {
        regarding: { kind: pod, namespace: 'shop', name: 'p', uid: undefined, resourceVersion: undefined },
        related: undefined,
        eventType: 'warning',
        reason: 'Bad',
        action: 'Bad',
        note: 'note',
      },
    ],
  ]);
  const cases = [
    [{ tag: 'not-granted', val: 'no rule' }, { kind: 'not-granted', detail: 'no rule', retryable: false }],
    [{ tag: 'not-found', val: 'gone' }, { kind: 'not-found', detail: 'gone' }],
    [{ tag: 'already-exists', val: 'there' }, { kind: 'already-exists' }],
    [{ tag: 'conflict', val: 'stale' }, { kind: 'conflict', retryable: false }],
    [
      { tag: 'invalid', val: { message: 'bad', causes: [{ reason: 'R', message: 'M', field: 'spec.x' }] } },
      { kind: 'invalid', detail: 'bad', causes: [{ reason: 'R', message: 'M', field: 'spec.x' }] },
    ],
    [{ tag: 'forbidden', val: 'rbac' }, { kind: 'forbidden' }],
    [{ tag: 'too-many-requests', val: { message: 'slow', retryAfterMs: 250n } }, { kind: 'too-many-requests', retryAfterMs: 250, retryable: true }],
    [{ tag: 'too-many-requests', val: { message: 'slow', retryAfterMs: undefined } }, { retryAfterMs: undefined }],
    [{ tag: 'timeout', val: 'late' }, { kind: 'timeout', retryable: true }],
    [{ tag: 'unavailable', val: 'down' }, { kind: 'unavailable', retryable: true }],
    [{ tag: 'failed', val: { code: 415, reason: 'UnsupportedMediaType', message: 'no' } }, { kind: 'failed', code: 415, reason: 'UnsupportedMediaType', message: 'failed: no' }],
  ];
  for (const [payload, expected] of cases) {
    refusal = payload;
    for (const attempt of [() => pods.get('web-0'), () => events.normal({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' } }, 'Ok', 'x')]) {
      assert.throws(attempt, (error) => {
        assert.ok(error instanceof KubeError, `${payload.tag}: ${error}`);
        for (const [field, value] of Object.entries(expected)) {
          assert.deepEqual(error[field], value, `${payload.tag}.${field}`);
        }
        return true;
      });
    }
  }
  refusal = undefined;
});

test('the metrics, workqueue, deadline and index imports get what the contract says', () => {
  const calls = [];
  installHost({
    log() {},
    cacheGet() {},
    cacheList() {},
    configGet() {},
    ...UNUSED,
    metricsAdd: (...args) => calls.push(['add', ...args]),
    metricsSet: (...args) => calls.push(['set', ...args]),
    metricsObserve: (...args) => calls.push(['observe', ...args]),
    requeueAfter: (delay) => calls.push(['requeue', delay]),
    remainingMs: () => 42n,
    clusterCurrent: () => 'east',
    clusterNames: () => ['east', 'west'],
    clusterTarget: (name) => {
      if (name === 'north') {
        throw { payload: 'not one of its clusters' };
      }
      calls.push(['target', name]);
    },
    indexLookup: (name, value, namespace) => {
      if (name === 'nodes') {
        throw { payload: { tag: 'unknown-index', val: name } };
      }
      return [JSON.stringify({ name, value, namespace })];
    },
  });
  metrics.counter('alerts_total').with('shop').inc();
  metrics.gauge('stuck').set(2);
  metrics.histogram('took_seconds').observe(0.5);
  workqueue.requeueAfter(30_000);
  workqueue.requeueAfter(1e30);
  assert.deepEqual(calls, [
    ['add', 'alerts_total', ['shop'], 1],
    ['set', 'stuck', [], 2],
    ['observe', 'took_seconds', [], 0.5],
    ['requeue', 30_000n],
    ['requeue', (1n << 64n) - 1n],
  ]);
  assert.throws(() => workqueue.requeueAfter(-1), /must not be negative/);
  assert.equal(deadline.remainingMs(), 42);
  assert.equal(cluster.current(), 'east');
  assert.deepEqual(cluster.names(), ['east', 'west']);
  assert.equal(
    cluster.within('west', () => 'done'),
    'done',
  );
  assert.deepEqual(calls.slice(-2), [
    ['target', 'west'],
    ['target', undefined],
  ]);
  assert.throws(() => cluster.within('north', () => assert.fail('ran')), /not one of its clusters/);
  assert.deepEqual(cache.byIndex('owner', 'u-1', 'shop'), [{ name: 'owner', value: 'u-1', namespace: 'shop' }]);
  assert.throws(
    () => cache.byIndex('nodes', 'n'),
    (error) => error instanceof CacheError && error.reason === 'unknown-index' && /no index named "nodes"/.test(error.message),
  );
});
