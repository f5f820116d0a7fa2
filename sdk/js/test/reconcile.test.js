// The reconcile API over the fake host: keys mapped from each kind, the
// cache's current state reconciled, requeues merged, failures thrown after
// every key is tried, finalizers and conditions.
import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';
import {
  Action,
  Controller,
  Delivery,
  KubeError,
  Manifest,
  Reconciler,
  Request,
  finalizer,
  kinds,
  setCondition,
} from '../src/index.js';
import * as testing from '../src/testing.js';

const deployment = (name, resourceVersion = '1', metadata = {}) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: 'shop', resourceVersion, ...metadata },
});
const replicaSet = (name, ...ownerReferences) => ({
  apiVersion: 'apps/v1',
  kind: 'ReplicaSet',
  metadata: { name, namespace: 'shop', ownerReferences },
});
const owner = (apiVersion, kind, name, controller = true) => ({ apiVersion, kind, name, uid: 'u', controller });
const configMap = (name, usedBy) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'shop', labels: { 'used-by': usedBy } },
});
const usedBy = (cm) => cm.metadata.labels['used-by'].split('.').map((name) => new Request(cm.metadata.namespace, name));

/** Records each reconcile; answers with what `results` says per name. */
class Rollouts extends Reconciler {
  static results = {};
  seen = [];

  controller() {
    return new Controller(kinds.Deployment, new Manifest('rollouts', '0.1.0'))
      .owns(kinds.ReplicaSet)
      .watches(kinds.ConfigMap, usedBy);
  }

  async reconcile(request, object) {
    this.seen.push([request.toString(), object]);
    const answer = Rollouts.results[request.name];
    if (answer instanceof Error) throw answer;
    return answer;
  }
}

beforeEach(() => {
  testing.reset();
  testing.declare(Rollouts);
  Rollouts.results = {};
});

test('every kind the controller names is subscribed coalesced', () => {
  const subscriptions = new Rollouts().manifest().subscriptions.map((s) => s.toRecord());
  assert.deepEqual(subscriptions.map((s) => s.kind.kind), ['Deployment', 'ReplicaSet', 'ConfigMap']);
  assert.ok(subscriptions.every((s) => s.delivery === Delivery.Coalesced));
});

test("a primary notification reconciles its key against the cache's current state", async () => {
  testing.cacheInsert(deployment('web', '7'));
  const plugin = new Rollouts();
  await plugin.onAdd(testing.added(deployment('web', '5')));
  assert.deepEqual(plugin.seen.map(([key, obj]) => [key, obj.metadata.resourceVersion]), [['shop/web', '7']]);
  assert.deepEqual(testing.requeues(), []);
});

test('an object gone from the cache is reconciled as undefined', async () => {
  const plugin = new Rollouts();
  await plugin.onDelete(testing.deleted(deployment('web')));
  assert.deepEqual(plugin.seen, [['shop/web', undefined]]);
});

test('an owned object reconciles its controller owner only', async () => {
  const plugin = new Rollouts();
  for (const rs of [
    replicaSet('a', owner('apps/v1', 'StatefulSet', 'db')),
    replicaSet('b', owner('example.com/v1', 'Deployment', 'web')),
    replicaSet('c', owner('apps/v1', 'Deployment', 'web', false)),
    replicaSet('d'),
  ]) {
    await plugin.onAdd(testing.added(rs));
  }
  assert.deepEqual(plugin.seen, []);
  const rs = replicaSet('web-5d9f', owner('apps/v1', 'Deployment', 'web'));
  await plugin.onUpdate(testing.updated(rs, rs));
  assert.deepEqual(plugin.seen.map(([key]) => key), ['shop/web']);
});

test("a cluster-scoped primary is looked up without the owned object's namespace", async () => {
  const seen = [];
  class Namespaces extends Reconciler {
    controller() {
      return new Controller(kinds.Namespace, new Manifest('ns', '0.1.0')).clusterScoped().owns(kinds.ConfigMap);
    }
    reconcile(request) {
      seen.push(request);
    }
  }
  testing.declare(Namespaces);
  const marker = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'm', namespace: 'shop', ownerReferences: [owner('v1', 'Namespace', 'shop')] } };
  await new Namespaces().onAdd(testing.added(marker));
  assert.deepEqual(seen.map(String), ['shop']);
  assert.equal(seen[0].namespace, undefined);
});

test('a watched object reconciles what its map returns and the soonest requeue wins', async () => {
  Rollouts.results = { web: Action.requeueAfter(60_000), api: Action.requeueAfter(10_000), jobs: Action.awaitChange() };
  const plugin = new Rollouts();
  await plugin.onAdd(testing.added(configMap('settings', 'web.api.jobs')));
  assert.deepEqual(plugin.seen.map(([key]) => key), ['shop/web', 'shop/api', 'shop/jobs']);
  assert.deepEqual(testing.requeues(), [10_000]);
});

test('a failed key is thrown after every other key is tried and nothing is requeued', async () => {
  Rollouts.results = { web: new Error('quota exceeded'), api: Action.requeueAfter(1) };
  const plugin = new Rollouts();
  await assert.rejects(plugin.onAdd(testing.added(configMap('settings', 'web.api'))), /reconciling shop\/web: quota exceeded/);
  assert.equal(plugin.seen.length, 2);
  assert.deepEqual(testing.requeues(), []);
});

test('an unknown result, a bad map and an unknown kind are errors naming what is at fault', async () => {
  Rollouts.results = { web: 'done' };
  await assert.rejects(new Rollouts().onAdd(testing.added(deployment('web'))), /shop\/web.*"done", not an Action/);
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web-0', namespace: 'shop' } };
  await assert.rejects(new Rollouts().onAdd(testing.added(pod)), /v1\/Pod.*neither reconciles, owns nor watches/);
  assert.throws(() => Action.requeueAfter(-1), /non-negative/);
  assert.throws(() => new Controller(kinds.Deployment, new Manifest('x', '0.1.0')).watches(kinds.ConfigMap), /needs a function/);
});

async function finalized(object, cleanupError) {
  const ran = [];
  const action = await finalizer(object, 'example.com/cleanup', ({ type }) => {
    ran.push(type);
    if (type === 'cleanup' && cleanupError) throw cleanupError;
    return type === 'apply' ? Action.requeueAfter(60_000) : undefined;
  });
  return [ran, action];
}

function patchedMetadata() {
  const calls = testing.takeKubeCalls();
  assert.deepEqual(calls.map((c) => [c.verb, c.key, c.patchType]), [['patch', 'shop/web', 'merge']]);
  return calls[0].object.metadata;
}

test('a finalizer is added, then applied, then cleaned up and removed', async () => {
  const object = deployment('web', '4', { finalizers: ['other'] });
  assert.deepEqual(await finalized(object), [[], Action.awaitChange()]);
  assert.deepEqual(patchedMetadata(), { finalizers: ['other', 'example.com/cleanup'], resourceVersion: '4' });

  Object.assign(object.metadata, { finalizers: ['other', 'example.com/cleanup'], resourceVersion: '5' });
  const [ran, action] = await finalized(object);
  assert.deepEqual([ran, action.requeueAfterMs], [['apply'], 60_000]);
  assert.deepEqual(testing.takeKubeCalls(), []);

  Object.assign(object.metadata, { deletionTimestamp: '2026-11-29T10:00:00Z', resourceVersion: '6' });
  await assert.rejects(finalized(object, new Error('bucket busy')), /bucket busy/);
  assert.deepEqual(testing.takeKubeCalls(), []);
  assert.deepEqual((await finalized(object))[0], ['cleanup']);
  assert.deepEqual(patchedMetadata().finalizers, ['other']);

  Object.assign(object.metadata, { finalizers: ['other'], resourceVersion: '7' });
  assert.deepEqual(await finalized(object), [[], Action.awaitChange()]);
  assert.deepEqual(testing.takeKubeCalls(), []);
});

test('a state the instance already wrote its finalizer change at is left alone', async () => {
  const stale = deployment('stale', '20', { finalizers: ['example.com/cleanup'], deletionTimestamp: '2026-11-29T10:00:00Z' });
  assert.deepEqual((await finalized(stale))[0], ['cleanup']);
  assert.equal(testing.takeKubeCalls().length, 1);
  // The same, stale state again: no second cleanup, no write.
  assert.deepEqual(await finalized(stale), [[], Action.awaitChange()]);
  assert.deepEqual(testing.takeKubeCalls(), []);
  const live = deployment('stale-add', '30');
  await finalized(live);
  assert.equal(testing.takeKubeCalls().length, 1);
  assert.deepEqual(await finalized(live), [[], Action.awaitChange()]);
  assert.deepEqual(testing.takeKubeCalls(), []);
  assert.deepEqual((await finalized(deployment('stale-add', '31', { finalizers: ['example.com/cleanup'] })))[0], ['apply']);
});

test('a cleanup that succeeded is not run again when the removal conflicts', async () => {
  const object = deployment('web', '40', { uid: '0b5e-web', finalizers: ['example.com/cleanup'], deletionTimestamp: '2026-11-29T10:00:00Z' });
  // A write that landed after the deletion makes the removal conflict...
  testing.scriptKube({ verb: 'patch', throws: new KubeError('conflict', 'the object has been modified'), times: 1 });
  await assert.rejects(finalized(object), (error) => error.kind === 'conflict' && /removing finalizer/.test(error.message));
  assert.equal(testing.takeKubeCalls().length, 1);
  // ...and the retry, at the newer state, only removes the finalizer.
  object.metadata.resourceVersion = '41';
  assert.deepEqual(await finalized(object), [[], Action.awaitChange()]);
  assert.deepEqual(patchedMetadata().finalizers, []);
  // A new object of the same name (another UID) is cleaned up as usual.
  Object.assign(object.metadata, { uid: '7c1d-web', resourceVersion: '50' });
  assert.deepEqual((await finalized(object))[0], ['cleanup']);
});

test('a finalizer write refused keeps its kind and names the finalizer', async () => {
  testing.scriptKube({ verb: 'patch', throws: new KubeError('not-granted', 'patch apps/Deployment is not granted') });
  await assert.rejects(
    finalized(deployment('web')),
    (error) => error instanceof KubeError && error.kind === 'not-granted' && /adding finalizer example.com\/cleanup/.test(error.message),
  );
});

test('setCondition moves the transition time only when the status changes', () => {
  const conditions = [];
  const ready = { type: 'Ready', status: 'True', reason: 'Synced', message: 'ok', observedGeneration: 1, lastTransitionTime: 't1' };
  assert.ok(setCondition(conditions, ready));
  assert.ok(!setCondition(conditions, { ...ready, lastTransitionTime: 't2' }));
  assert.ok(setCondition(conditions, { ...ready, observedGeneration: 2, lastTransitionTime: 't3' }));
  assert.deepEqual([conditions[0].lastTransitionTime, conditions[0].observedGeneration], ['t1', 2]);
  assert.ok(setCondition(conditions, { ...ready, status: 'False', reason: 'Missing', lastTransitionTime: 't4' }));
  assert.deepEqual([conditions[0].status, conditions[0].lastTransitionTime, conditions.length], ['False', 't4', 1]);
});

test('generationChanged reconciles spec changes, requeues and other kinds only', async () => {
  class SpecChanges extends Rollouts {
    controller() {
      return super.controller().generationChanged();
    }
  }
  const at = (generation, resourceVersion) => deployment('web', resourceVersion, { generation });
  testing.cacheInsert(at(2, '12'));
  const plugin = new SpecChanges();
  await plugin.onUpdate(testing.updated(at(1, '10'), at(1, '11'))); // a status change
  await plugin.onUpdate(testing.resynced(at(1, '11')));
  assert.deepEqual(plugin.seen, []);
  const rs = replicaSet('web-1', owner('apps/v1', 'Deployment', 'web'));
  await plugin.onUpdate(testing.updated(at(1, '11'), at(2, '12'))); // a spec change
  await plugin.onUpdate(testing.updated(at(2, '12'), at(2, '12'))); // a requeue
  await plugin.onUpdate(testing.updated(rs, rs)); // an owned object
  assert.equal(plugin.seen.length, 3);
});
