import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Handler, HeraldError, Manifest, Subscription, log } from '../src/index.js';
import { bindPlugin } from '../src/component.js';
import { ADDED, DELETED, UPDATED, write } from '../src/frame.js';
import * as testing from '../src/testing.js';

const pod = (name) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'a', resourceVersion: '1' } });

class Counting extends Handler {
  calls = [];

  manifest() {
    return new Manifest('counting', '1').subscribe(Subscription.to('', 'v1', 'Pod'));
  }

  onAdd(event) {
    this.calls.push(`add ${event.key}`);
    if (event.name === 'bad') {
      throw new HeraldError('bad pod');
    }
  }

  onUpdate(update) {
    this.calls.push(`update ${update.key} after ${this.calls.length}`);
    log.info(this.calls.join('; '));
  }
}

/** A frame of one notification of `what` ('add', 'update', 'delete') about the Pod `name`. */
function frameOf(what, name, old) {
  const codes = { add: ADDED, update: UPDATED, delete: DELETED };
  return write([{ what: codes[what], context: testing.contextFor(pod(name)), json: '{}', oldJson: old }]);
}

test('one instance keeps its state across deliveries; a throw becomes err({index, message})', () => {
  testing.reset();
  const { manifest, delivery } = bindPlugin(Counting);
  assert.equal(manifest().name, 'counting');
  assert.deepEqual(delivery.options(), { oldState: true, maxBatch: 1 });
  assert.deepEqual(delivery.deliver(frameOf('add', 'good')), { tag: 'ok', val: undefined });
  assert.deepEqual(delivery.deliver(frameOf('add', 'bad')), { tag: 'err', val: { index: 0, message: 'bad pod' } });
  assert.deepEqual(delivery.deliver(frameOf('update', 'good', '{}')), { tag: 'ok', val: undefined });
  assert.deepEqual(delivery.deliver(frameOf('delete', 'good')), { tag: 'ok', val: undefined }, 'the default onDelete does nothing');
  assert.deepEqual(testing.takeMessages(), ['add a/good; add a/bad; update a/good after 2']);
});

test('error messages carry the type of unexpected errors and the cause chain', async () => {
  const failing = {
    manifest: () => new Manifest('failing', '1'),
    onAdd(event) {
      return event.object.spec.containers.length;
    },
    onUpdate() {
      throw new HeraldError('reconciling', { cause: new Error('cache miss', { cause: 'no such key' }) });
    },
    onDelete() {
      throw 'a string';
    },
  };
  const add = await testing.dispatch(failing, testing.added(pod('x')));
  assert.equal(add.tag, 'err');
  assert.match(add.val, /^TypeError: Cannot read properties of undefined/);
  assert.deepEqual(await testing.dispatch(failing, testing.updated(pod('x'), pod('x'))), {
    tag: 'err',
    val: 'reconciling: cache miss: no such key',
  });
  assert.deepEqual(await testing.dispatch(failing, testing.deleted(pod('x')), 'delete'), { tag: 'err', val: 'a string' });
});

test('async handlers are awaited: a rejection is a failure', async () => {
  const asynchronous = {
    manifest: () => new Manifest('async', '1'),
    async onAdd(event) {
      await null;
      if (event.name === 'bad') {
        throw new Error('rejected');
      }
    },
  };
  assert.deepEqual(await testing.dispatch(asynchronous, testing.added(pod('good'))), { tag: 'ok', val: undefined });
  assert.deepEqual(await testing.dispatch(asynchronous, testing.added(pod('bad'))), { tag: 'err', val: 'rejected' });
  assert.deepEqual(
    await testing.dispatch(asynchronous, testing.updated(pod('good'), pod('good'))),
    { tag: 'ok', val: undefined },
    'a missing handler method does nothing',
  );
});

test('a plugin must be a class or an object with manifest(), and manifest() must give a Manifest', () => {
  assert.throws(() => bindPlugin(42), /must default-export a class extending Handler/);
  assert.throws(() => bindPlugin({ onAdd() {} }), /must default-export a class extending Handler/);
  assert.throws(() => bindPlugin({ manifest: () => ({ name: 'x' }) }).manifest(), /manifest\(\) must return a Manifest/);
  assert.throws(() => bindPlugin(class extends Handler {}).manifest(), /must define manifest\(\)/);
  assert.deepEqual(bindPlugin({ manifest: () => new Manifest('x', '1'), onAdd: 'no' }).delivery.deliver(frameOf('add', 'p')), {
    tag: 'err',
    val: { index: 0, message: "TypeError: the plugin's onAdd is not a function" },
  });
});

test('the fake host builds the contexts the host would send', () => {
  const node = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-1', resourceVersion: '9' } };
  const context = testing.contextFor(node);
  assert.equal(context.key, 'node-1');
  assert.equal(context.resourceVersion, '9');
  assert.equal(context.resource, 'nodes');
  assert.equal(testing.added(pod('web-0')).key, 'a/web-0');
  assert.equal(testing.listed(pod('p')).isInitialList, true);
  assert.equal(testing.resynced(pod('p')).isResync, true);
  assert.equal(testing.vanished(pod('p')).finalStateUnknown, true);
  const update = testing.updated(pod('p'), { ...pod('p'), metadata: { ...pod('p').metadata, resourceVersion: '2' } });
  assert.equal(update.resourceVersion, '2');
  assert.equal(update.old.metadata.resourceVersion, '1');
  assert.deepEqual(
    ['Pod', 'Ingress', 'NetworkPolicy', 'Gateway', 'ConfigMap', 'Endpoints'].map(testing.resourceOf),
    ['pods', 'ingresses', 'networkpolicies', 'gateways', 'configmaps', 'endpointses'],
  );
  assert.deepEqual(testing.manifestOf(Counting).subscriptions[0].kind, { group: '', version: 'v1', kind: 'Pod' });
});

test('replay feeds recorded events through the fake cache, remembering old states', async () => {
  testing.reset();
  const { cache } = await import('../src/index.js');
  const seen = [];
  const plugin = {
    manifest: () => new Manifest('replayer', '1'),
    onAdd: (event) => seen.push(`add ${event.key} initial=${event.isInitialList} cached=${cache.list(event.kind).length}`),
    onUpdate: (update) => seen.push(`update ${update.key} ${update.old.metadata.resourceVersion}→${update.new.metadata.resourceVersion}`),
    onDelete: (event) => {
      seen.push(`delete ${event.key} unknown=${event.finalStateUnknown} cached=${cache.list(event.kind).length}`);
      throw new Error('refused');
    },
  };
  const pod = (rv) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'a', resourceVersion: rv } });
  const lines = [
    { type: 'ADDED', initial: true, object: pod('1') },
    { type: 'MODIFIED', object: pod('2') },
    { type: 'update', old: pod('1'), object: pod('3') },
    { type: 'DELETED', finalStateUnknown: true, object: pod('3') },
  ].map((event) => JSON.stringify(event));
  const replayed = await testing.replay(plugin, `${lines.join('\n')}\n\n`);
  assert.deepEqual(seen, ['add a/p initial=true cached=1', 'update a/p 1→2', 'update a/p 1→3', 'delete a/p unknown=true cached=0']);
  assert.deepEqual(
    replayed.map(({ line, type, result }) => [line, type, result.tag]),
    [
      [1, 'add', 'ok'],
      [2, 'update', 'ok'],
      [3, 'update', 'ok'],
      [4, 'delete', 'err'],
    ],
  );
  assert.equal(replayed[3].result.val, 'refused');
  await assert.rejects(testing.replay(plugin, JSON.stringify({ type: 'update', object: pod('9') })), /line 1: an update of a\/p with no old state/);
  await assert.rejects(testing.replay(plugin, '{"type":"upsert","object":{}}'), /line 1: unknown event type "upsert"/);
  await assert.rejects(testing.replay(plugin, '\n{nope'), /line 2: not JSON/);
});
