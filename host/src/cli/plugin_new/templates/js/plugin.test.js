import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as testing from '@herald/sdk/testing';
import Plugin from '../src/plugin.js';

function pod(phase) {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web-0', namespace: 'shop' }, status: { phase } };
}

test('logs adds, phase changes and deletions', () => {
  testing.reset();
  const plugin = new Plugin();
  plugin.onAdd(testing.added(pod('Pending')));
  plugin.onUpdate(testing.updated(pod('Pending'), pod('Running')));
  plugin.onUpdate(testing.updated(pod('Running'), pod('Running')));
  plugin.onDelete(testing.deleted(pod('Running')));
  assert.deepEqual(testing.takeMessages(), [
    'added pod=shop/web-0 phase=Pending',
    'phase pod=shop/web-0 from=Pending to=Running',
    'deleted pod=shop/web-0',
  ]);
});
