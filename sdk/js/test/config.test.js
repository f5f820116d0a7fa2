import assert from 'node:assert/strict';
import { test } from 'node:test';
import { config } from '../src/index.js';
import * as testing from '../src/testing.js';

test('absent configuration is undefined', () => {
  testing.reset();
  assert.equal(config.get(), undefined);
  assert.equal(config.raw(), undefined);
});

test('configuration parses, or says why not', () => {
  testing.reset();
  testing.setConfig({ delayMs: 5 });
  assert.equal(config.get().delayMs, 5);
  assert.equal(config.raw(), '{"delayMs":5}');
  testing.setConfigJson('{"delayMs": ');
  assert.throws(() => config.get(), /^HeraldError: decoding the plugin configuration: /);
  testing.clearConfig();
  assert.equal(config.get(), undefined);
});
