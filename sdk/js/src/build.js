/**
 * Building a plugin module into a WebAssembly component: bundle the module
 * with the SDK (rolldown; TypeScript is accepted), then componentize the
 * bundle against the vendored `herald:plugin@0.7.0` WIT (ComponentizeJS).
 * `herald-build` is the command-line face of {@link build}.
 *
 * @module
 */

import { mkdtemp, rm, writeFile, stat, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const SDK_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The vendored copy of the contract (`wit/herald.wit` and `wit/deps/`): the repository's
 * `wit/0.7.0` with its `deps` resolved. */
export const WIT_DIR = join(SDK_ROOT, 'wit');

/** The world every plugin targets (`herald:plugin/plugin@0.7.0`, the package of {@link WIT_DIR}). */
export const WORLD = 'plugin';

/**
 * ComponentizeJS features turned off: a plugin serves no HTTP (`fetch-event`,
 * the incoming handler). Its `http` feature, `fetch` over
 * `wasi:http/outgoing-handler`, stays on.
 */
export const DISABLED_FEATURES = Object.freeze(['fetch-event']);

/**
 * The entry module the bundle starts from: connects the host's imports to
 * the SDK first, then binds the plugin's default export to the component's
 * exports.
 */
function entrySource(pluginPath) {
  const sdk = (file) => JSON.stringify(join(SDK_ROOT, 'src', file));
  return `import ${JSON.stringify('./connect-host.js')};
import { bindPlugin } from ${sdk('component.js')};
import plugin from ${JSON.stringify(pluginPath)};

const bound = bindPlugin(plugin);
export const manifest = bound.manifest;
export const delivery = bound.delivery;
export const admission = bound.admission;
`;
}

function connectHostSource() {
  const sdk = JSON.stringify(join(SDK_ROOT, 'src', 'host.js'));
  const fetch = JSON.stringify(join(SDK_ROOT, 'src', 'fetch.js'));
  return `import { log } from 'herald:plugin/log@0.2.0';
import { get as cacheGet, list as cacheList } from 'herald:plugin/cache@0.2.0';
import { get as configGet } from 'herald:plugin/config@0.2.0';
import {
  get as kubeGet,
  create as kubeCreate,
  replace as kubeReplace,
  patch as kubePatch,
  apply as kubeApply,
  delete as kubeDelete,
} from 'herald:plugin/kube@0.2.0';
import { publish as eventsPublish } from 'herald:plugin/events@0.2.0';
import { lookup as indexLookup } from 'herald:plugin/index@0.3.0';
import { add as metricsAdd, set as metricsSet, observe as metricsObserve } from 'herald:plugin/metrics@0.3.0';
import { requeueAfter } from 'herald:plugin/workqueue@0.3.0';
import { remainingMs } from 'herald:plugin/deadline@0.4.0';
import {
  current as clusterCurrent,
  names as clusterNames,
  target as clusterTarget,
} from 'herald:plugin/cluster@0.6.0';
import { installHost } from ${sdk};
import { followRedirects } from ${fetch};

// The engine's fetch, over wasi:http, follows no redirect: the SDK's wrapper does.
globalThis.fetch = followRedirects(globalThis.fetch.bind(globalThis));

installHost({
  log,
  cacheGet,
  cacheList,
  configGet,
  kubeGet,
  kubeCreate,
  kubeReplace,
  kubePatch,
  kubeApply,
  kubeDelete,
  eventsPublish,
  indexLookup,
  metricsAdd,
  metricsSet,
  metricsObserve,
  requeueAfter,
  remainingMs,
  clusterCurrent,
  clusterNames,
  clusterTarget,
});
`;
}

/**
 * Bundles the plugin module at `pluginPath` with the SDK into one ES module
 * (text). `@herald/sdk` always resolves to this SDK, so the plugin and the
 * glue share one copy; `@herald/sdk/testing` is refused (tests only).
 *
 * @param {string} pluginPath
 * @returns {Promise<string>}
 */
export async function bundle(pluginPath) {
  const { rolldown } = await import('rolldown');
  const work = await mkdtemp(join(tmpdir(), 'herald-bundle-'));
  try {
    const entry = join(work, 'entry.js');
    await writeFile(join(work, 'connect-host.js'), connectHostSource());
    await writeFile(entry, entrySource(resolve(pluginPath)));
    const bundler = await rolldown({
      input: entry,
      platform: 'neutral',
      external: [/^herald:plugin\//],
      logLevel: 'warn',
      resolve: {
        alias: {
          '@herald/sdk/testing': join(SDK_ROOT, 'src', 'testing-refused.js'),
          '@herald/sdk': join(SDK_ROOT, 'src', 'index.js'),
        },
      },
    });
    try {
      const { output } = await bundler.generate({ format: 'esm' });
      return output[0].code;
    } finally {
      await bundler.close();
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * Builds the plugin module at `pluginPath` into a component at `outputPath`.
 *
 * @param {object} options
 * @param {string} options.plugin Path of the plugin's entry module (`.js`, `.mjs` or `.ts`), which default-exports its handler.
 * @param {string} options.output Where to write the `.wasm` component.
 * @param {string} [options.bundleOutput] Also keep the bundled JavaScript here (for debugging).
 * @returns {Promise<{bytes: number, milliseconds: number}>} The component's size and the build's duration.
 */
export async function build({ plugin, output, bundleOutput }) {
  const started = performance.now();
  await stat(plugin).catch(() => {
    throw new Error(`no plugin module at ${plugin}`);
  });
  const code = await bundle(plugin);
  const { componentize } = await import('@bytecodealliance/componentize-js');
  const work = await mkdtemp(join(tmpdir(), 'herald-build-'));
  try {
    const sourcePath = join(work, 'plugin.bundle.js');
    await writeFile(sourcePath, code);
    if (bundleOutput !== undefined) {
      await mkdir(dirname(resolve(bundleOutput)), { recursive: true });
      await writeFile(bundleOutput, code);
    }
    const { component } = await componentize({
      sourcePath,
      witPath: WIT_DIR,
      worldName: WORLD,
      disableFeatures: [...DISABLED_FEATURES],
    });
    await mkdir(dirname(resolve(output)), { recursive: true });
    await writeFile(output, component);
    return { bytes: component.length, milliseconds: Math.round(performance.now() - started) };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
