/// <reference path="./interfaces/herald-plugin-cache.d.ts" />
/// <reference path="./interfaces/herald-plugin-config.d.ts" />
/// <reference path="./interfaces/herald-plugin-handler.d.ts" />
/// <reference path="./interfaces/herald-plugin-log.d.ts" />
/// <reference path="./interfaces/herald-plugin-types.d.ts" />
declare module 'herald:plugin/plugin@0.1.0' {
  export type Manifest = import('herald:plugin/types@0.1.0').Manifest;
  export type * as HeraldPluginCache010 from 'herald:plugin/cache@0.1.0'; // import herald:plugin/cache@0.1.0
  export type * as HeraldPluginConfig010 from 'herald:plugin/config@0.1.0'; // import herald:plugin/config@0.1.0
  export type * as HeraldPluginLog010 from 'herald:plugin/log@0.1.0'; // import herald:plugin/log@0.1.0
  export type * as HeraldPluginTypes010 from 'herald:plugin/types@0.1.0'; // import herald:plugin/types@0.1.0
  export * as handler from 'herald:plugin/handler@0.1.0'; // export herald:plugin/handler@0.1.0
  /**
  * Describe the plugin. Called once per load, before any handler call.
  */
  export function manifest(): Manifest;
}
