import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Context, Event, GroupVersionKind, HeraldError, Update } from '../src/index.js';

const POD = '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-0","namespace":"shop","resourceVersion":"42"},"status":{"phase":"Running"}}';

function context(key) {
  return new Context({
    kind: { group: '', version: 'v1', kind: 'Pod' },
    resource: 'pods',
    key,
    resourceVersion: '42',
    isInitialList: true,
  });
}

test('the key splits into namespace and name', () => {
  const event = new Event(context('shop/web-0'), POD);
  assert.equal(event.namespace, 'shop');
  assert.equal(event.name, 'web-0');
  const clusterScoped = new Event(context('node-1'), '{}');
  assert.equal(clusterScoped.namespace, undefined);
  assert.equal(clusterScoped.name, 'node-1');
});

test('accessors forward the context; flags default to false', () => {
  const event = new Event(context('shop/web-0'), POD);
  assert.ok(event.kind instanceof GroupVersionKind);
  assert.equal(String(event.kind), 'v1/Pod');
  assert.equal(event.resource, 'pods');
  assert.equal(event.key, 'shop/web-0');
  assert.equal(event.resourceVersion, '42');
  assert.equal(event.isInitialList, true);
  assert.equal(event.isResync, false);
  assert.equal(event.finalStateUnknown, false);
  assert.equal(event.json, POD);
  assert.ok(Object.isFrozen(event.context));
});

test('objects are parsed once, on first use', () => {
  const event = new Event(context('shop/web-0'), POD);
  assert.equal(event.object.status.phase, 'Running');
  assert.equal(event.object, event.object);
});

test('an update parses both sides', () => {
  const update = new Update(context('shop/web-0'), POD, POD.replace('Running', 'Succeeded'));
  assert.equal(update.old.status.phase, 'Running');
  assert.equal(update.new.status.phase, 'Succeeded');
  assert.equal(update.oldJson, POD);
});

test('a decode error says which side failed', () => {
  const event = new Event(context('shop/web-0'), '{"broken"');
  assert.throws(
    () => event.object,
    (error) => error instanceof HeraldError && error.message.startsWith('decoding the object as JSON: '),
  );
  const update = new Update(context('shop/web-0'), POD, 'nope');
  assert.throws(() => update.new, /^HeraldError: decoding the new object as JSON: /);
  assert.equal(update.old.metadata.name, 'web-0');
});

test('object helpers read metadata and tolerate missing fields', async () => {
  const { objects } = await import('../src/index.js');
  const pod = {
    metadata: {
      name: 'web-0',
      namespace: 'shop',
      labels: { app: 'web' },
      ownerReferences: [{ kind: 'Node', name: 'n', controller: false }, { kind: 'ReplicaSet', name: 'web-5', controller: true }],
    },
  };
  assert.equal(objects.key(pod), 'shop/web-0');
  assert.equal(objects.key({ metadata: { name: 'node-1' } }), 'node-1');
  assert.deepEqual(objects.labels(pod), { app: 'web' });
  assert.deepEqual(objects.annotations(pod), {});
  assert.equal(objects.controllerOf(pod).name, 'web-5');
  assert.equal(objects.controllerOf({}), undefined);
  assert.equal(objects.name(undefined), '');
  assert.equal(objects.truncate('abcdefgh', 4), 'abcd…(8 chars)');
  assert.equal(objects.truncate('abcd', 4), 'abcd');
  assert.equal(objects.truncate('😀😀😀', 2), '😀😀…(3 chars)', 'counts characters, not UTF-16 units');
  assert.throws(() => objects.truncate('a', 0), /max must be a positive whole number/);
});
