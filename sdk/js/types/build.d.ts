// Declarations of the component build (src/build.js).

/** The vendored WIT directory. */
export const WIT_DIR: string;
/** The world every plugin targets: `plugin`. */
export const WORLD: string;
/** ComponentizeJS features turned off (`http`, `fetch-event`). */
export const DISABLED_FEATURES: readonly string[];
/** Bundles a plugin module with the SDK into one ES module (text). */
export function bundle(pluginPath: string): Promise<string>;
/** Builds a plugin module into a component. */
export function build(options: { plugin: string; output: string; bundleOutput?: string }): Promise<{ bytes: number; milliseconds: number }>;
