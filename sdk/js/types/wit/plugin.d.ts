/// <reference path="./interfaces/herald-plugin-cache.d.ts" />
/// <reference path="./interfaces/herald-plugin-config.d.ts" />
/// <reference path="./interfaces/herald-plugin-events.d.ts" />
/// <reference path="./interfaces/herald-plugin-handler.d.ts" />
/// <reference path="./interfaces/herald-plugin-kube.d.ts" />
/// <reference path="./interfaces/herald-plugin-log.d.ts" />
/// <reference path="./interfaces/herald-plugin-types.d.ts" />
declare module 'herald:plugin/plugin@0.2.0' {
  export type Manifest = import('herald:plugin/types@0.2.0').Manifest;
  export type * as HeraldPluginCache020 from 'herald:plugin/cache@0.2.0'; // import herald:plugin/cache@0.2.0
  export type * as HeraldPluginConfig020 from 'herald:plugin/config@0.2.0'; // import herald:plugin/config@0.2.0
  export type * as HeraldPluginEvents020 from 'herald:plugin/events@0.2.0'; // import herald:plugin/events@0.2.0
  export type * as HeraldPluginKube020 from 'herald:plugin/kube@0.2.0'; // import herald:plugin/kube@0.2.0
  export type * as HeraldPluginLog020 from 'herald:plugin/log@0.2.0'; // import herald:plugin/log@0.2.0
  export type * as HeraldPluginTypes020 from 'herald:plugin/types@0.2.0'; // import herald:plugin/types@0.2.0
  export * as handler from 'herald:plugin/handler@0.2.0'; // export herald:plugin/handler@0.2.0
  /**
  * Describe the plugin. Called once per load, before any handler call.
  */
  export function manifest(): Manifest;
}
