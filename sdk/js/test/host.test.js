// Runs without the fake host (each test file is its own process under
// node --test): what a plugin sees with no host, and how the SDK maps what
// the real host's imports return and throw.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CacheError, cache, config, log } from '../src/index.js';
import { installHost } from '../src/host.js';

test('without a host every call says how to get one', () => {
  assert.throws(() => log.info('x'), /no Herald host: .* import '@herald\/sdk\/testing'/);
  assert.throws(() => config.get(), /no Herald host/);
});

test("the host's cache errors and undecodable objects become CacheErrors", () => {
  const calls = [];
  installHost({
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
});
