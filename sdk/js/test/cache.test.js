import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CacheError, GroupVersionKind, cache } from '../src/index.js';
import * as testing from '../src/testing.js';

const REPLICA_SET = new GroupVersionKind('apps', 'v1', 'ReplicaSet');

function replicaSet(namespace, name, app) {
  return { apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name, namespace, labels: { app } } };
}

const names = (objects) => objects.map((object) => object.metadata.name);

test('look-ups go through the host, by namespace and label selector', () => {
  testing.reset();
  testing.cacheInsert(replicaSet('shop', 'web-1', 'web'));
  testing.cacheInsert(replicaSet('shop', 'db-1', 'db'));
  testing.cacheInsert(replicaSet('blog', 'web-2', 'web'));
  assert.equal(cache.get(REPLICA_SET, 'shop', 'web-1').metadata.name, 'web-1');
  assert.equal(cache.get(REPLICA_SET, 'blog', 'web-1'), undefined);
  assert.deepEqual(names(cache.list(REPLICA_SET, 'shop', 'app=web')), ['web-1']);
  assert.deepEqual(names(cache.list(REPLICA_SET, undefined, 'app=web')), ['web-2', 'web-1']);
  assert.deepEqual(names(cache.list({ group: 'apps', version: 'v1', kind: 'ReplicaSet' }, 'shop')), ['db-1', 'web-1']);
  testing.cacheRemove(REPLICA_SET, 'shop', 'web-1');
  assert.equal(cache.getJson(REPLICA_SET, 'shop', 'web-1'), undefined);
});

test('cluster-scoped objects are looked up without a namespace', () => {
  testing.reset();
  testing.cacheInsert({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-1' } });
  assert.equal(cache.get({ group: '', version: 'v1', kind: 'Node' }, undefined, 'node-1').metadata.name, 'node-1');
  assert.equal(cache.get({ group: '', version: 'v1', kind: 'Node' }, null, 'node-1').metadata.name, 'node-1');
});

test('unsubscribed kinds and bad selectors fail with a CacheError', () => {
  testing.reset();
  testing.subscribe({ group: '', version: 'v1', kind: 'Pod' });
  const pods = { group: '', version: 'v1', kind: 'Pod' };
  assert.throws(
    () => cache.list({ group: 'apps', version: 'v1', kind: 'Deployment' }),
    (error) => error instanceof CacheError && error.reason === 'not-subscribed' && error.message === 'not subscribed to apps/v1/Deployment',
  );
  assert.throws(
    () => cache.list(pods, undefined, 'a=b=c'),
    (error) => error instanceof CacheError && error.reason === 'invalid-selector' && /invalid label selector: /.test(error.message),
  );
  assert.deepEqual(cache.list(pods), []);
});

test('objects inserted as JSON text come back as given', () => {
  testing.reset();
  const widget = new GroupVersionKind('example.com', 'v1', 'Widget');
  const json = '{"metadata":{"name":"w","namespace":"n"},"spec":7}';
  testing.cacheInsertJson(widget, json);
  assert.equal(cache.getJson(widget, 'n', 'w'), json);
  assert.deepEqual(cache.listJson(widget, 'n'), [json]);
  assert.equal(cache.get(widget, 'n', 'w').spec, 7);
});

test('argument types are checked before the host is asked', () => {
  testing.reset();
  assert.throws(() => cache.get(REPLICA_SET, 'shop', 7), /name must be a string/);
  assert.throws(() => cache.list(REPLICA_SET, 3), /namespace must be a string, undefined or null/);
  assert.throws(() => cache.list('apps/v1/ReplicaSet'), /expected a kind/);
});

test('selectors render labels then expressions', () => {
  assert.equal(
    cache.labelSelector({
      matchLabels: { app: 'web', tier: 'front' },
      matchExpressions: [
        { key: 'env', operator: 'In', values: ['prod', 'staging'] },
        { key: 'track', operator: 'NotIn', values: ['canary'] },
        { key: 'owner', operator: 'Exists' },
        { key: 'legacy', operator: 'DoesNotExist' },
      ],
    }),
    'app=web,tier=front,env in (prod,staging),track notin (canary),owner,!legacy',
  );
  assert.equal(cache.labelSelector({}), undefined);
  assert.equal(cache.labelSelector(undefined), undefined);
});

test('the fake cache applies the Kubernetes selector grammar', () => {
  const labels = { app: 'web', tier: 'front' };
  assert.ok(testing.selectorMatches('', labels));
  assert.ok(testing.selectorMatches('app=web', labels));
  assert.ok(testing.selectorMatches('app==web,tier!=back', labels));
  assert.ok(!testing.selectorMatches('app=web,tier=back', labels));
  assert.ok(testing.selectorMatches('tier in (front, back),app notin (db)', labels));
  assert.ok(!testing.selectorMatches('tier notin (front)', labels));
  assert.ok(testing.selectorMatches('app,!legacy', labels));
  assert.ok(!testing.selectorMatches('!app', labels));
  assert.throws(() => testing.selectorMatches('a=b=c', labels), /invalid label key or value/);
  assert.throws(() => testing.selectorMatches('a in x', labels), /expected a parenthesised set/);
  assert.throws(() => testing.selectorMatches('a in (x', labels), /expected a parenthesised set/);
});
