/// <reference path="./interfaces/herald-plugin-admission.d.ts" />
/// <reference path="./interfaces/herald-plugin-cache.d.ts" />
/// <reference path="./interfaces/herald-plugin-cluster.d.ts" />
/// <reference path="./interfaces/herald-plugin-config.d.ts" />
/// <reference path="./interfaces/herald-plugin-deadline.d.ts" />
/// <reference path="./interfaces/herald-plugin-delivery.d.ts" />
/// <reference path="./interfaces/herald-plugin-events.d.ts" />
/// <reference path="./interfaces/herald-plugin-index.d.ts" />
/// <reference path="./interfaces/herald-plugin-kube.d.ts" />
/// <reference path="./interfaces/herald-plugin-log.d.ts" />
/// <reference path="./interfaces/herald-plugin-metrics.d.ts" />
/// <reference path="./interfaces/herald-plugin-types.d.ts" />
/// <reference path="./interfaces/herald-plugin-workqueue.d.ts" />
/// <reference path="./interfaces/wasi-clocks-monotonic-clock.d.ts" />
/// <reference path="./interfaces/wasi-http-outgoing-handler.d.ts" />
/// <reference path="./interfaces/wasi-http-types.d.ts" />
/// <reference path="./interfaces/wasi-io-error.d.ts" />
/// <reference path="./interfaces/wasi-io-poll.d.ts" />
/// <reference path="./interfaces/wasi-io-streams.d.ts" />
declare module 'herald:plugin/plugin@0.7.0' {
  export type Manifest = import('herald:plugin/types@0.3.0').Manifest;
  export type * as HeraldPluginCache020 from 'herald:plugin/cache@0.2.0'; // import herald:plugin/cache@0.2.0
  export type * as HeraldPluginCluster060 from 'herald:plugin/cluster@0.6.0'; // import herald:plugin/cluster@0.6.0
  export type * as HeraldPluginConfig020 from 'herald:plugin/config@0.2.0'; // import herald:plugin/config@0.2.0
  export type * as HeraldPluginDeadline040 from 'herald:plugin/deadline@0.4.0'; // import herald:plugin/deadline@0.4.0
  export type * as HeraldPluginEvents020 from 'herald:plugin/events@0.2.0'; // import herald:plugin/events@0.2.0
  export type * as HeraldPluginIndex030 from 'herald:plugin/index@0.3.0'; // import herald:plugin/index@0.3.0
  export type * as HeraldPluginKube020 from 'herald:plugin/kube@0.2.0'; // import herald:plugin/kube@0.2.0
  export type * as HeraldPluginLog020 from 'herald:plugin/log@0.2.0'; // import herald:plugin/log@0.2.0
  export type * as HeraldPluginMetrics030 from 'herald:plugin/metrics@0.3.0'; // import herald:plugin/metrics@0.3.0
  export type * as HeraldPluginTypes020 from 'herald:plugin/types@0.2.0'; // import herald:plugin/types@0.2.0
  export type * as HeraldPluginTypes030 from 'herald:plugin/types@0.3.0'; // import herald:plugin/types@0.3.0
  export type * as HeraldPluginWorkqueue030 from 'herald:plugin/workqueue@0.3.0'; // import herald:plugin/workqueue@0.3.0
  export type * as WasiClocksMonotonicClock0212 from 'wasi:clocks/monotonic-clock@0.2.12'; // import wasi:clocks/monotonic-clock@0.2.12
  export type * as WasiHttpOutgoingHandler0212 from 'wasi:http/outgoing-handler@0.2.12'; // import wasi:http/outgoing-handler@0.2.12
  export type * as WasiHttpTypes0212 from 'wasi:http/types@0.2.12'; // import wasi:http/types@0.2.12
  export type * as WasiIoError0212 from 'wasi:io/error@0.2.12'; // import wasi:io/error@0.2.12
  export type * as WasiIoPoll0212 from 'wasi:io/poll@0.2.12'; // import wasi:io/poll@0.2.12
  export type * as WasiIoStreams0212 from 'wasi:io/streams@0.2.12'; // import wasi:io/streams@0.2.12
  export * as admission from 'herald:plugin/admission@0.5.0'; // export herald:plugin/admission@0.5.0
  export * as delivery from 'herald:plugin/delivery@0.7.0'; // export herald:plugin/delivery@0.7.0
  /**
  * What the plugin is and needs.
  */
  export function manifest(): Manifest;
}
