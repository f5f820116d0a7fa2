import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as testing from '@herald/sdk/testing';
import { kinds } from '@herald/sdk';
import Plugin from '../src/plugin.js';

function deployment(image) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'shop', uid: 'uid-web' },
    spec: { replicas: 2, template: { spec: { containers: [{ name: 'app', image }] } } },
  };
}

test('keeps an owned summary and looks again later', async () => {
  testing.reset();
  testing.declare(Plugin);
  testing.cacheInsert(deployment('nginx:1.28'));
  const plugin = new Plugin();
  // The notification may be older than the cache: the cache's state wins.
  await plugin.onAdd(testing.added(deployment('nginx:1.27')));
  const [write, ...more] = testing.takeKubeCalls();
  assert.equal(more.length, 0);
  assert.deepEqual([write.verb, write.key], ['apply', 'shop/web-summary']);
  assert.equal(write.object.metadata.ownerReferences[0].uid, 'uid-web');
  assert.deepEqual(write.object.data, { images: 'nginx:1.28', replicas: '2' });
  assert.deepEqual(testing.takeRequeues(), [600_000]);
  assert.deepEqual(testing.takeMessages(), ['summarized deployment=shop/web images=nginx:1.28 replicas=2']);

  testing.cacheRemove(kinds.Deployment, 'shop', 'web');
  await plugin.onDelete(testing.deleted(deployment('nginx:1.28')));
  assert.deepEqual(testing.takeKubeCalls(), []);
  assert.deepEqual(testing.takeMessages(), ['gone deployment=shop/web']);
});
