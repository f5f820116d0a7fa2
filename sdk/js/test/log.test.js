import assert from 'node:assert/strict';
import { test } from 'node:test';
import { log } from '../src/index.js';
import * as testing from '../src/testing.js';

test('each level function writes one line at its level', () => {
  testing.reset();
  const key = 'shop/web-0';
  log.trace(`t ${key}`);
  log.debug('d', 1);
  log.info('i', key);
  log.warn('w');
  log.error('e', new Error('boom'));
  assert.deepEqual(testing.takeLogs(), [
    { level: 'trace', message: 't shop/web-0' },
    { level: 'debug', message: 'd 1' },
    { level: 'info', message: 'i shop/web-0' },
    { level: 'warn', message: 'w' },
    { level: 'error', message: 'e boom' },
  ]);
  assert.deepEqual(testing.takeLogs(), []);
});

test('arguments render as strings, JSON, or their message', () => {
  assert.equal(log.format(['a', { b: [1, 2] }, 3n, undefined, null, new TypeError('bad')]), 'a {"b":[1,2]} 3 undefined null TypeError: bad');
  const cyclic = {};
  cyclic.self = cyclic;
  assert.equal(log.format([cyclic]), '[object Object]');
});

test('write refuses an unknown level', () => {
  assert.throws(() => log.write('notice', 'x'), /log level must be one of trace, debug, info, warn, error/);
});
