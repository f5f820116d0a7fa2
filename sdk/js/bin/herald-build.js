#!/usr/bin/env node
// herald-build: builds a Herald plugin module into a WebAssembly component.
import { parseArgs } from 'node:util';
import { build } from '../src/build.js';

const USAGE = `usage: herald-build <plugin.js|plugin.ts> -o <plugin.wasm> [--bundle <bundle.js>]

Bundles the plugin module (which default-exports a class extending Handler)
with @herald/sdk and componentizes it for the world herald:plugin/plugin@0.7.0.
Then: herald plugin check <plugin.wasm>`;

let parsed;
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: {
      output: { type: 'string', short: 'o' },
      bundle: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
} catch (error) {
  console.error(`herald-build: ${error.message}\n\n${USAGE}`);
  process.exit(2);
}
const { values, positionals } = parsed;
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
if (positionals.length !== 1 || values.output === undefined) {
  console.error(`herald-build: expected one plugin module and -o <output.wasm>\n\n${USAGE}`);
  process.exit(2);
}
try {
  const { bytes, milliseconds } = await build({ plugin: positionals[0], output: values.output, bundleOutput: values.bundle });
  console.log(`built ${values.output} (${bytes} bytes) in ${(milliseconds / 1000).toFixed(1)} s`);
} catch (error) {
  console.error(`herald-build: ${error.message}`);
  process.exit(1);
}
