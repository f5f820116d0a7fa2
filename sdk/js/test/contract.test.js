// The vendored contract and the declarations generated from it stay in step
// with the repository's wit/0.7.0, the version this SDK targets.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const sdk = (path) => fileURLToPath(new URL(`../${path}`, import.meta.url));

const SYNC =
  'rm -rf sdk/js/wit && cp -rL wit/0.7.0 sdk/js/wit && rm -rf sdk/js/wit/deps/*/deps, then regenerate the types (node sdk/js/scripts/wit-types.js)';

/** `relative path -> bytes` of a WIT package: its files and each dependency's, not a dependency's own deps. */
async function witFiles(root) {
  const files = new Map();
  const wit = async (dir, prefix) => {
    for (const name of (await readdir(dir)).filter((file) => file.endsWith('.wit')).sort()) {
      files.set(prefix + name, await readFile(join(dir, name)));
    }
  };
  await wit(root, '');
  for (const dep of (await readdir(join(root, 'deps'))).sort()) {
    await wit(join(root, 'deps', dep), `deps/${dep}/`);
  }
  return files;
}

test('wit/ is the repository contract (wit/0.7.0, its deps resolved), file for file', async () => {
  const vendored = await witFiles(sdk('wit'));
  const contract = await witFiles(sdk('../../wit/0.7.0'));
  assert.deepEqual([...vendored.keys()], [...contract.keys()], `the vendored WIT differs: ${SYNC}`);
  for (const [name, bytes] of contract) {
    assert.ok(vendored.get(name).equals(bytes), `${name} differs from the repository's: ${SYNC}`);
  }
  assert.match(vendored.get('herald.wit').toString(), /package herald:plugin@0\.7\.0;/);
});

test('types/wit is what jco generates from the contract', () => {
  const output = execFileSync(process.execPath, [sdk('scripts/wit-types.js'), '--check'], { encoding: 'utf8' });
  assert.equal(output.trim(), 'types/wit is up to date');
});

test('the hand-written declarations type-check a TypeScript plugin (tsc --noEmit)', () => {
  const tsc = fileURLToPath(new URL('bin/tsc', import.meta.resolve('typescript/package.json')));
  execFileSync(process.execPath, [tsc, '-p', sdk('test/types/tsconfig.json')], { encoding: 'utf8', stdio: 'pipe' });
});

test("the glue exports exactly the world's exports, each interface's functions", async () => {
  const { bindPlugin } = await import('../src/component.js');
  const { Manifest } = await import('../src/index.js');
  const world = await readFile(sdk('types/wit/plugin.d.ts'), 'utf8');
  const interfaces = [...world.matchAll(/^ {2}export \* as (\w+) from '([^']+)';/gm)];
  const functions = [...world.matchAll(/^ {2}export function (\w+)\(/gm)].map((match) => match[1]);
  const bound = bindPlugin({ manifest: () => new Manifest('x', '1') });
  assert.deepEqual(Object.keys(bound).sort(), [...functions, ...interfaces.map((match) => match[1])].sort());
  for (const [, name, module] of interfaces) {
    const file = `types/wit/interfaces/${module.replace(/^herald:plugin\//, 'herald-plugin-').replace(/@.*$/, '')}.d.ts`;
    const declared = [...(await readFile(sdk(file), 'utf8')).matchAll(/^ {2}export function (\w+)\(/gm)].map((match) => match[1]);
    assert.deepEqual(Object.keys(bound[name]).sort(), declared.sort(), module);
  }
  assert.ok(interfaces.some(([, name, module]) => name === 'delivery' && module === 'herald:plugin/delivery@0.7.0'));
});
