/**
 * The kinds plugins most often watch and write, as {@link GroupVersionKind}
 * constants (the counterpart of the Rust SDK's `k8s-openapi` types and the
 * Python SDK's `herald_sdk.kinds`): `Subscription.to(kinds.Pod)`,
 * `new kube.Api(kinds.ConfigMap, {namespace})`, `cache.get(kinds.Pod, ns, name)`.
 * The TypeScript declarations type the objects of each (`Pod`, `Deployment`,
 * `ConfigMap`, …), for the fields plugins commonly read. Any other kind (a
 * CRD) is `new GroupVersionKind(group, version, kind)`.
 *
 * @module
 */

import { GroupVersionKind } from './kind.js';

const core = (kind) => new GroupVersionKind('', 'v1', kind);
const apps = (kind) => new GroupVersionKind('apps', 'v1', kind);

/** A `v1` Pod. */
export const Pod = core('Pod');
/** A `v1` ConfigMap. */
export const ConfigMap = core('ConfigMap');
/** A `v1` Secret (its `data` values are base64, as the API sends them). */
export const Secret = core('Secret');
/** A `v1` Service. */
export const Service = core('Service');
/** A `v1` Namespace (cluster-scoped). */
export const Namespace = core('Namespace');
/** A `v1` Node (cluster-scoped). */
export const Node = core('Node');
/** An `apps/v1` Deployment. */
export const Deployment = apps('Deployment');
/** An `apps/v1` ReplicaSet. */
export const ReplicaSet = apps('ReplicaSet');
/** An `apps/v1` StatefulSet. */
export const StatefulSet = apps('StatefulSet');
/** An `apps/v1` DaemonSet. */
export const DaemonSet = apps('DaemonSet');
/** A `batch/v1` Job. */
export const Job = new GroupVersionKind('batch', 'v1', 'Job');
/** A `batch/v1` CronJob. */
export const CronJob = new GroupVersionKind('batch', 'v1', 'CronJob');
/** A `networking.k8s.io/v1` Ingress. */
export const Ingress = new GroupVersionKind('networking.k8s.io', 'v1', 'Ingress');
/** A `networking.k8s.io/v1` NetworkPolicy. */
export const NetworkPolicy = new GroupVersionKind('networking.k8s.io', 'v1', 'NetworkPolicy');
