// The vendored contract and the declarations generated from it stay in step
// with the repository's wit/0.2.0/herald.wit, the version this SDK targets.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const sdk = (path) => fileURLToPath(new URL(`../${path}`, import.meta.url));

test('wit/herald.wit is byte-identical to the repository contract (wit/0.2.0/herald.wit)', async () => {
  const vendored = await readFile(sdk('wit/herald.wit'));
  const contract = await readFile(sdk('../../wit/0.2.0/herald.wit'));
  assert.ok(
    vendored.equals(contract),
    'sdk/js/wit/herald.wit differs from wit/0.2.0/herald.wit: copy it (cp wit/0.2.0/herald.wit sdk/js/wit/herald.wit) and regenerate the types (node sdk/js/scripts/wit-types.js)',
  );
});

test('types/wit is what jco generates from the contract', () => {
  const output = execFileSync(process.execPath, [sdk('scripts/wit-types.js'), '--check'], { encoding: 'utf8' });
  assert.equal(output.trim(), 'types/wit is up to date');
});

test('the hand-written declarations type-check a TypeScript plugin (tsc --noEmit)', () => {
  const tsc = fileURLToPath(new URL('bin/tsc', import.meta.resolve('typescript/package.json')));
  execFileSync(process.execPath, [tsc, '-p', sdk('test/types/tsconfig.json')], { encoding: 'utf8', stdio: 'pipe' });
});
