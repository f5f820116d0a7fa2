// The recorded events of examples/events/configmap-diff.jsonl through the
// fake host: the same lines `herald plugin replay` prints for the built
// component (host/tests/cli/sdk_js.rs checks those).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import * as testing from '@herald/sdk/testing';
import ConfigMapDiff from '../src/plugin.js';

test('the recorded ConfigMap changes give one line per change', async () => {
  testing.reset();
  const events = await readFile(new URL('../../../examples/events/configmap-diff.jsonl', import.meta.url), 'utf8');
  const replayed = await testing.replay(ConfigMapDiff, events);
  assert.deepEqual(
    replayed.map((event) => event.result.tag),
    Array(9).fill('ok'),
  );
  assert.deepEqual(
    replayed.flatMap((event) => event.logs.map((line) => `${line.level} ${line.message}`)),
    [
      'debug listed configmap=shop/web-config keys=2',
      'info created configmap=shop/feature-flags keys=2',
      'info changed configmap=shop/feature-flags +dark-mode="on" ~checkout-v2="false"→"true" -banner',
      'info changed configmap=shop/web-config +nginx.conf="server {\\n  listen 8080;\\n  location / { p…(71 chars)" ~LOG_LEVEL="info"→"debug"',
      'info changed configmap=shop/web-config +ca.crt=<26 bytes>',
      'info deleted configmap=shop/feature-flags keys=2',
      'info deleted configmap=shop/web-config keys=3 binary=1 final-state-unknown',
    ],
  );
});
