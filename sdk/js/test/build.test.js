// The bundling half of herald-build (fast); the whole build, down to a
// component the host checks and replays, is exercised by the host's test
// suite on the example plugin (host/tests/cli/sdk_js.rs).
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { bundle } from '../src/build.js';

// Every folder made here, removed once the file's tests are done.
const folders = [];
after(() => Promise.all(folders.map((dir) => rm(dir, { recursive: true, force: true }))));

async function pluginFile(name, source) {
  const dir = await mkdtemp(join(tmpdir(), 'herald-sdk-test-'));
  folders.push(dir);
  const path = join(dir, name);
  await writeFile(path, source);
  return path;
}

test('a TypeScript plugin bundles into one module importing only the host', async () => {
  const path = await pluginFile(
    'plugin.ts',
    `import { Handler, Manifest, Subscription, log, type Event } from '@herald/sdk';
export default class Hello extends Handler {
  manifest(): Manifest { return new Manifest('hello', '0.1.0').subscribe(Subscription.to('', 'v1', 'Pod')); }
  onAdd(event: Event): void { log.info('hello ' + event.key); }
}`,
  );
  const code = await bundle(path);
  const imports = [...code.matchAll(/^import .* from ["']([^"']+)["'];?$/gm)].map((match) => match[1]).sort();
  assert.deepEqual(imports, [
    'herald:plugin/cache@0.2.0',
    'herald:plugin/cluster@0.6.0',
    'herald:plugin/config@0.2.0',
    'herald:plugin/deadline@0.4.0',
    'herald:plugin/events@0.2.0',
    'herald:plugin/index@0.3.0',
    'herald:plugin/kube@0.2.0',
    'herald:plugin/log@0.2.0',
    'herald:plugin/metrics@0.3.0',
    'herald:plugin/workqueue@0.3.0',
  ]);
  assert.match(code, /globalThis\.fetch = followRedirects\(/, 'fetch follows redirects');
  assert.match(code, /export \{[^}]*\bdelivery\b[^}]*\}/);
  assert.doesNotMatch(code, /export \{[^}]*\bhandler\b[^}]*\}/, "0.6.0's handler export is gone");
  assert.match(code, /export \{[^}]*\bmanifest\b[^}]*\}/);
  assert.match(code, /export \{[^}]*\badmission\b[^}]*\}/);
  assert.doesNotMatch(code, /: Event/, 'types are stripped');
});

test('a plugin importing the fake host is refused at load time', async () => {
  const path = await pluginFile('plugin.js', "import * as testing from '@herald/sdk/testing';\nexport default testing;\n");
  const code = await bundle(path);
  assert.match(code, /@herald\/sdk\/testing is for tests: a plugin module must not import it/);
});

test('herald-build explains its usage', () => {
  const cli = fileURLToPath(new URL('../bin/herald-build.js', import.meta.url));
  const missing = spawnSync(process.execPath, [cli, 'plugin.js'], { encoding: 'utf8' });
  assert.equal(missing.status, 2);
  assert.match(missing.stderr, /expected one plugin module and -o <output.wasm>/);
  const absent = spawnSync(process.execPath, [cli, '/nonexistent/plugin.js', '-o', '/tmp/x.wasm'], { encoding: 'utf8' });
  assert.equal(absent.status, 1);
  assert.match(absent.stderr, /no plugin module at \/nonexistent\/plugin.js/);
  assert.match(execFileSync(process.execPath, [cli, '--help'], { encoding: 'utf8' }), /^usage: herald-build/);
});
