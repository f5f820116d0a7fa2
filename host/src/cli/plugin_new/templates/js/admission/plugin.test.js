import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as testing from '@herald/sdk/testing';
import Plugin from '../src/plugin.js';

function pod(image, initImage) {
  const spec = { containers: [{ name: 'app', image }] };
  if (initImage !== undefined) {
    spec.initContainers = [{ name: 'setup', image: initImage }];
  }
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web-0', namespace: 'shop' }, spec };
}

test('refuses unpinned images and allows pinned ones', () => {
  const plugin = new Plugin();
  for (const image of ['shop/web:1.4.2', 'registry:5000/web:2', 'web@sha256:0123abcd']) {
    const verdict = plugin.validate(testing.creating(pod(image)));
    assert.equal(verdict.allowed, true, `${image}: ${verdict.message}`);
  }
  for (const image of ['shop/web', 'shop/web:latest', 'registry:5000/web']) {
    const verdict = plugin.validate(testing.creating(pod(image)));
    assert.equal(verdict.allowed, false, `${image} was allowed`);
    assert.equal(verdict.message, `images must be pinned to a tag or digest, not latest: ${image}`);
  }
});

test('checks init containers and updates', () => {
  const plugin = new Plugin();
  const init = plugin.validate(testing.creating(pod('web:1', 'busybox')));
  assert.equal(init.message, 'images must be pinned to a tag or digest, not latest: busybox');
  const update = plugin.validate(testing.updating(pod('web:1'), pod('web:latest')));
  assert.equal(update.allowed, false, 'an update to :latest was allowed');
});
