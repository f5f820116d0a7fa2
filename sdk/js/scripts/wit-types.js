#!/usr/bin/env node
// Generates the TypeScript declarations of the contract (types/wit/) from the
// vendored wit/ (the repository's wit/0.7.0 with its deps resolved) with
// jco's guest type generator, or with --check says whether the committed
// ones are up to date.
//
// `jco guest-types <path>` (jco 1.35.0) cannot read a WIT path: its bundled
// WASI shim (preview2-shim 0.26.1) preopens no directory, so every path is
// "No such file or directory (os error 44)". This script preopens the
// vendored directory in that shim and calls the generator itself.
import { readFile, writeFile, mkdir, readdir, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const sdkRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
const typesDir = join(sdkRoot, 'types', 'wit');

/** The generated declarations: file path under types/wit → text. */
export async function generate() {
  // jco's own copy of jco-transpile: <jco-transpile>/dist/index.js.
  const jcoMain = fileURLToPath(import.meta.resolve('@bytecodealliance/jco'));
  const transpileDir = dirname(dirname(createRequire(jcoMain).resolve('@bytecodealliance/jco-transpile')));
  const shim = createRequire(join(transpileDir, 'package.json')).resolve('@bytecodealliance/preview2-shim/filesystem');
  const { _setPreopens } = await import(pathToFileURL(shim).href);
  _setPreopens({ '/wit': join(sdkRoot, 'wit') });
  const bindgen = await import(pathToFileURL(join(transpileDir, 'vendor', 'js-component-bindgen-component.js')).href);
  await bindgen.$init;
  const files = bindgen.generateTypes('plugin', {
    wit: { tag: 'path', val: '/wit' },
    world: 'plugin',
    tlaCompat: false,
    features: { tag: 'list', val: [] },
    guest: true,
  });
  return new Map(files.map(([name, bytes]) => [name, new TextDecoder().decode(bytes)]));
}

async function listed(dir, prefix = '') {
  const names = [];
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const name = prefix + entry.name;
    if (entry.isDirectory()) {
      names.push(...(await listed(join(dir, entry.name), `${name}/`)));
    } else {
      names.push(name);
    }
  }
  return names.sort();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const files = await generate();
  if (process.argv.includes('--check')) {
    const committed = await listed(typesDir);
    const stale = [...files.keys()].filter((name) => !committed.includes(name));
    for (const name of committed) {
      const text = await readFile(join(typesDir, name), 'utf8');
      if (files.get(name) !== text) {
        stale.push(name);
      }
    }
    if (stale.length > 0) {
      console.error(`types/wit is out of date (${stale.join(', ')}): run node scripts/wit-types.js`);
      process.exit(1);
    }
    console.log('types/wit is up to date');
  } else {
    await rm(typesDir, { recursive: true, force: true });
    for (const [name, text] of files) {
      await mkdir(dirname(join(typesDir, name)), { recursive: true });
      await writeFile(join(typesDir, name), text);
    }
    console.log(`wrote ${[...files.keys()].map((name) => `types/wit/${name}`).join(', ')}`);
  }
}
