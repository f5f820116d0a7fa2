// kube.Api and events against the fake host, which records every call and
// answers from scripts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EVENTS, KubeError, Manifest, Subscription, Verb, WriteRule, events, kube } from '../src/index.js';
import * as testing from '../src/testing.js';

const DEPLOYMENT = { group: 'apps', version: 'v1', kind: 'Deployment' };
const WEB = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'shop', uid: 'u-1', resourceVersion: '7' },
  spec: { replicas: 2 },
};

const is = (kind) => (error) => error instanceof KubeError && error.kind === kind;

test('unscripted, a get is not found and writes echo the body', () => {
  testing.reset();
  const deployments = new kube.Api('apps', 'v1', 'Deployment', { namespace: 'shop' });
  assert.throws(() => deployments.get('web'), (error) => is('not-found')(error) && error.message === 'not-found: deployments.apps "web" not found');
  assert.deepEqual(deployments.create({ metadata: { name: 'web' }, spec: { replicas: 1 } }), {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'shop' },
    spec: { replicas: 1 },
  });
  assert.deepEqual(deployments.patch('web', { spec: { replicas: 3 } }), { spec: { replicas: 3 } });
  assert.equal(deployments.apply('web', { spec: { replicas: 4 } }, { force: true }).metadata.name, 'web');
  assert.equal(deployments.delete('web', { uid: 'u-1', propagation: 'foreground' }), undefined);
  const calls = testing.takeKubeCalls();
  assert.deepEqual(
    calls.map((call) => [call.verb, call.kind.toString(), call.key]),
    ['get', 'create', 'patch', 'apply', 'delete'].map((verb) => [verb, 'apps/v1/Deployment', 'shop/web']),
  );
  assert.equal(calls[2].patchType, 'merge');
  assert.deepEqual(calls[2].object, { spec: { replicas: 3 } });
  assert.equal(calls[3].force, true);
  assert.deepEqual(calls[3].object.metadata, { name: 'web', namespace: 'shop' });
  assert.deepEqual([calls[4].uid, calls[4].resourceVersion, calls[4].propagation], ['u-1', undefined, 'foreground']);
  assert.deepEqual(testing.takeKubeCalls(), []);
});

test('scripts answer in order and run out', () => {
  testing.reset();
  testing.scriptKube({ verb: 'get', kind: DEPLOYMENT, namespace: 'shop', name: 'web', returns: WEB });
  testing.scriptKube({ verb: 'update', throws: new KubeError('conflict', 'the object has been modified'), times: 1 });
  const deployments = new kube.Api(DEPLOYMENT, { namespace: 'shop' });
  const web = deployments.get('web');
  assert.deepEqual(web, WEB);
  assert.deepEqual(deployments.get('web'), WEB, 'a script without times answers every time');
  assert.throws(() => new kube.Api(DEPLOYMENT, { namespace: 'other' }).get('web'), is('not-found'));
  web.spec.replicas = 5;
  assert.throws(() => deployments.replace('web', web), (error) => is('conflict')(error) && error.retryable === false);
  assert.equal(deployments.replace('web', web).spec.replicas, 5, 'the conflict was scripted once');
  assert.deepEqual(
    testing.takeKubeCalls().map((call) => call.verb),
    ['get', 'get', 'get', 'update', 'update'],
  );
});

test('the status variants name the subresource; a JSON patch answers with the identity', () => {
  testing.reset();
  const pods = new kube.Api('', 'v1', 'Pod', { namespace: 'shop' });
  pods.replaceStatus('web-0', { status: { phase: 'Running' } });
  assert.deepEqual(pods.patchStatus('web-0', [{ op: 'replace', path: '/status/phase', value: 'Failed' }], { type: 'json' }), {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web-0', namespace: 'shop' },
  });
  pods.applyStatus('web-0', { status: { phase: 'Running' } });
  testing.scriptKube({ verb: 'get', subresource: 'status', returns: '{"status":{"phase":"Running"}}' });
  assert.equal(pods.getStatus('web-0').status.phase, 'Running');
  assert.deepEqual(
    testing.takeKubeCalls().map((call) => [call.verb, call.subresource]),
    [
      ['update', 'status'],
      ['patch', 'status'],
      ['apply', 'status'],
      ['get', 'status'],
    ],
  );
});

test('every error case can be scripted, and carries its details', () => {
  testing.reset();
  const errors = [
    new KubeError('not-granted', 'no rule'),
    new KubeError('not-found', 'gone'),
    new KubeError('already-exists', 'there'),
    new KubeError('conflict', 'stale'),
    new KubeError('invalid', 'bad', { causes: [{ reason: 'FieldValueRequired', message: 'Required', field: 'spec.x' }] }),
    new KubeError('forbidden', 'rbac'),
    new KubeError('too-many-requests', 'slow down', { retryAfterMs: 1500 }),
    new KubeError('timeout', 'deadline'),
    new KubeError('unavailable', '503'),
    new KubeError('failed', 'bad request', { code: 400, reason: 'BadRequest' }),
  ];
  const configMaps = new kube.Api('', 'v1', 'ConfigMap', { namespace: 'shop' });
  for (const error of errors) {
    testing.scriptKube({ verb: 'get', throws: error, times: 1 });
    assert.throws(() => configMaps.get('cm'), (thrown) => {
      assert.deepEqual(thrown, error);
      return true;
    });
  }
  assert.equal(errors.filter((error) => error.retryable).length, 3);
  assert.throws(() => new KubeError('gone', 'x'), /unknown kube error kind gone/);
});

test('wrong arguments say so', () => {
  testing.reset();
  const pods = new kube.Api('', 'v1', 'Pod', { namespace: 'a' });
  assert.throws(() => pods.patch('p', {}, { type: 'yaml' }), /patch type must be one of merge, json, strategic/);
  assert.throws(() => pods.delete('p', { propagation: 'now' }), /propagation must be one of/);
  assert.throws(() => pods.get(''), /name must be a non-empty string/);
  assert.throws(() => new kube.Api('', 'v1', 'Pod', { namespace: '' }), /namespace must be a non-empty string/);
  assert.throws(() => testing.scriptKube({ returns: {}, throws: new KubeError('not-found', 'x') }), /returns or throws, not both/);
  assert.throws(() => testing.scriptKube({ throws: new Error('x') }), /throws must be a KubeError/);
  assert.deepEqual(testing.takeKubeCalls(), []);
});

class Scaler {
  manifest() {
    return new Manifest('scaler', '1')
      .subscribe(Subscription.to('apps', 'v1', 'Deployment'))
      .write(WriteRule.to('apps', 'Deployment').verbs(Verb.Get, Verb.Patch).namespaces('shop'));
  }
}

test('enforce refuses calls outside the write rules, as the host does', () => {
  testing.reset();
  testing.enforce(Scaler);
  const shop = new kube.Api(DEPLOYMENT, { namespace: 'shop' });
  shop.patch('web', { spec: { replicas: 1 } });
  assert.throws(() => shop.delete('web'), (error) => is('not-granted')(error) && /no write rule allows delete on apps\/Deployment in namespace shop/.test(error.message));
  assert.throws(() => shop.patchStatus('web', {}), /patch on apps\/Deployment subresource status/);
  assert.throws(() => new kube.Api(DEPLOYMENT, { namespace: 'other' }).get('web'), /in namespace other/);
  assert.throws(() => events.warning(WEB, 'Scaled', 'x'), (error) => is('not-granted')(error) && /events capability/.test(error.message));
  assert.equal(testing.takeKubeCalls().length, 4);
  assert.equal(testing.takeEvents().length, 1);
  testing.enforce(undefined);
  new kube.Api(DEPLOYMENT, { namespace: 'other' }).delete('web');
  testing.enforce(new Manifest('x', '1').capability(EVENTS).write(WriteRule.to('', 'Namespace').verbs('apply').allNamespaces()));
  new kube.Api('', 'v1', 'Namespace').apply('a', {});
  events.normal(WEB, 'Seen', 'ok');
  assert.equal(testing.takeEvents().length, 1);
});

test('events are built from the object', () => {
  testing.reset();
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web-0', namespace: 'shop', uid: 'p-1' } };
  events.warning(pod, 'DisallowedImage', 'image evil:1 is not allowed');
  events.normal(pod, 'Labelled', 'labelled it', { action: 'Label', related: WEB });
  const [warning, normal] = testing.takeEvents();
  assert.deepEqual(warning, {
    regarding: { kind: { group: '', version: 'v1', kind: 'Pod' }, namespace: 'shop', name: 'web-0', uid: 'p-1', resourceVersion: undefined },
    related: undefined,
    eventType: 'warning',
    reason: 'DisallowedImage',
    action: 'DisallowedImage',
    note: 'image evil:1 is not allowed',
  });
  assert.deepEqual([normal.eventType, normal.action], ['normal', 'Label']);
  assert.deepEqual(normal.related, { kind: DEPLOYMENT, namespace: 'shop', name: 'web', uid: 'u-1', resourceVersion: '7' });
});

test('event arguments are checked and long notes cut', () => {
  testing.reset();
  const node = { metadata: { name: 'node-1' } };
  assert.throws(() => events.warning(node, 'NotReady', 'x'), /pass \{kind\}/);
  events.warning(node, 'NotReady', 'é'.repeat(1000), { kind: { group: '', version: 'v1', kind: 'Node' } });
  const [event] = testing.takeEvents();
  assert.equal(event.regarding.namespace, undefined);
  assert.ok(new TextEncoder().encode(event.note).length <= events.MAX_NOTE_BYTES);
  assert.ok(event.note.endsWith('é…'));
  assert.throws(() => events.warning(WEB, '', 'x'), /reason must be a non-empty string/);
  assert.throws(() => events.warning(WEB, 'R'.repeat(129), 'x'), /more than 128/);
  assert.throws(() => events.publish(WEB, 'error', 'R', 'x'), /type must be 'normal' or 'warning'/);
});

test('scripted publish failures, then success', () => {
  testing.reset();
  testing.scriptEvents({ throws: new KubeError('too-many-requests', 'event rate limit', { retryAfterMs: 1000 }), times: 1 });
  assert.throws(() => events.warning(WEB, 'R', 'first'), (error) => is('too-many-requests')(error) && error.retryAfterMs === 1000);
  events.warning(WEB, 'R', 'second');
  assert.deepEqual(
    testing.takeEvents().map((event) => event.note),
    ['first', 'second'],
  );
});

test('reset forgets calls, scripts, events and enforcement', () => {
  testing.reset();
  testing.scriptKube({ verb: 'get', returns: {} });
  testing.enforce(Scaler);
  assert.throws(() => events.warning(WEB, 'R', 'x'), is('not-granted'));
  testing.reset();
  assert.deepEqual([testing.takeKubeCalls(), testing.takeEvents()], [[], []]);
  assert.throws(() => new kube.Api(DEPLOYMENT, { namespace: 'elsewhere' }).get('web'), is('not-found'));
});
