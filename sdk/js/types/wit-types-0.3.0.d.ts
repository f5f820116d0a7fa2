// 0.3.0's `types` interface: the manifest with metrics and indexes. jco
// 1.35's type generator writes one file per interface name, so 0.2.0's
// `types` (types/wit/interfaces/herald-plugin-types.d.ts) takes its place;
// this is it by hand, from wit/deps/herald-plugin-0.3.0/herald.wit.
declare module 'herald:plugin/types@0.3.0' {
  export type GroupVersionKind = import('herald:plugin/types@0.2.0').GroupVersionKind;
  export type IndexBy = IndexByLabel | IndexByField | IndexByOwner;
  export interface IndexByLabel {
    tag: 'label';
    val: string;
  }
  export interface IndexByField {
    tag: 'field';
    val: string;
  }
  export interface IndexByOwner {
    tag: 'owner';
  }
  export interface IndexDefinition {
    name: string;
    kind: GroupVersionKind;
    by: IndexBy;
  }
  export type MetricKind = 'counter' | 'gauge' | 'histogram';
  export interface MetricDefinition {
    name: string;
    help: string;
    kind: MetricKind;
    labelNames: Array<string>;
    buckets: Float64Array;
  }
  export interface Manifest {
    name: string;
    version: string;
    subscriptions: Array<import('herald:plugin/types@0.2.0').Subscription>;
    limits: import('herald:plugin/types@0.2.0').Limits;
    capabilities: Array<string>;
    writes: Array<import('herald:plugin/types@0.2.0').WriteRule>;
    metrics: Array<MetricDefinition>;
    indexes: Array<IndexDefinition>;
  }
}
