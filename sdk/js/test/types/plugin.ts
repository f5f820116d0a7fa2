// A TypeScript plugin that must type-check against types/*.d.ts (run by
// test/types.test.js with tsc --noEmit). The lines marked @ts-expect-error
// must fail to type-check: they prove the declarations are not `any`.
import {
  Action,
  Controller,
  Reconciler,
  Request,
  finalizer,
  setCondition,
  AdmissionRule,
  EVENTS,
  FailurePolicy,
  Mutation,
  Verdict,
  Webhook,
  HTTP,
  Handler,
  Index,
  Metric,
  KubeError,
  Limits,
  Manifest,
  Subscription,
  Verb,
  WriteRule,
  cache,
  cluster,
  config,
  deadline,
  events,
  kinds,
  kube,
  log,
  metrics,
  objects,
  workqueue,
  type AdmissionReview,
  type Deployment,
  type Event,
  type Pod as PodObject,
  type Update,
} from '@herald/sdk';
import * as testing from '@herald/sdk/testing';

interface Pod {
  apiVersion: 'v1';
  kind: 'Pod';
  metadata: { name: string; namespace: string; labels?: Record<string, string> };
  spec?: { nodeName?: string };
}

export default class Typed extends Handler {
  static override maxBatch = 8;
  static override oldState = true;
  seen = 0;

  override manifest(): Manifest {
    const settings = config.get<{ namespace?: string }>() ?? {};
    const pods = Subscription.to('', 'v1', 'Pod').labels('app=web').coalesced();
    if (settings.namespace !== undefined) {
      pods.namespace(settings.namespace);
    }
    return new Manifest('typed', '0.1.0')
      .subscribe(pods)
      .limits(new Limits().callDeadlineMs(500).memoryBytes(64n * 1024n * 1024n))
      .write(WriteRule.to('', 'Pod').verbs(Verb.Patch, 'get').namespaces('shop').status())
      .capability(EVENTS)
      .subscribe(Subscription.to(kinds.Deployment).fields('metadata.name=web'))
      .write(WriteRule.to(kinds.ConfigMap).verbs('apply').allNamespaces())
      .capability(HTTP)
      .metric(Metric.counter('alerts_total', 'Alerts').labels('namespace'))
      .metric(Metric.histogram('took_seconds', 'Took').buckets(0.1, 1))
      .index(Index.byOwner('owner', kinds.ReplicaSet));
  }

  override onAdd(event: Event): void {
    this.seen += 1;
    const pod = event.object as unknown as Pod;
    const sets = cache.list({ group: 'apps', version: 'v1', kind: 'ReplicaSet' }, event.namespace, 'app=web');
    log.info(`added pod=${event.key} node=${pod.spec?.nodeName ?? '-'} replicaSets=${sets.length} name=${objects.name(sets[0])}`);
  }

  override onDelete(event: Event): void {
    const pods = new kube.Api<Pod>('', 'v1', 'Pod', { namespace: event.namespace });
    try {
      const pod: Pod = pods.get(event.name);
      pods.patch(pod.metadata.name, { metadata: { labels: { seen: 'yes' } } }, { type: 'merge' });
      pods.delete(event.name, { propagation: 'background' });
    } catch (error) {
      if (error instanceof KubeError && error.kind === 'too-many-requests') {
        const wait: number | undefined = error.retryAfterMs;
        void wait;
      } else if (!(error instanceof kube.KubeError)) {
        throw error;
      }
    }
    events.warning(event.object, 'Deleted', 'it went', { action: 'Observe' });
  }

  override async onUpdate(update: Update): Promise<void> {
    const labels: Record<string, string> = objects.labels(update.new);
    if (update.isResync) {
      return;
    }
    log.debug(labels);
    const deployment = cache.get<Deployment>(kinds.Deployment, update.namespace, update.name);
    const owned = cache.byIndex('owner', deployment?.metadata?.uid ?? '', update.namespace);
    metrics.counter('alerts_total').with(update.namespace ?? '').inc();
    metrics.histogram('took_seconds').observe(0.2);
    const origin: string = cluster.current();
    const elsewhere: number = cluster
      .names()
      .filter((name) => name !== origin)
      .map((name) => cluster.within(name, () => name.length))
      .reduce((a, b) => a + b, 0);
    log.debug(`${origin} ${elsewhere}`);
    if (deadline.remainingMs() > 100) {
      const response = await fetch('https://hooks.example.com/x', { method: 'POST', body: JSON.stringify({ owned: owned.length }) });
      log.info(`posted status=${response.status}`);
    }
    workqueue.requeueAfter(30_000);
  }
}

const record = new Manifest('typed', '1').subscribe(Subscription.to('', 'v1', 'Pod')).toRecord();
const delivery: 'every-event' | 'coalesced' = record.subscriptions[0]!.delivery;
const resync: bigint | undefined = record.subscriptions[0]!.resyncPeriodMs;
const result = await testing.dispatch(Typed, testing.added({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'a', namespace: 'b' } }));
const message: string | undefined = result.tag === 'err' ? result.val : undefined;
void [delivery, resync, message];

const batch: number = Typed.maxBatch + Handler.maxBatch;
void batch;
// @ts-expect-error: oldState is a boolean.
class Wrong extends Handler {
  static override oldState = 'no';
}
void Wrong;

// @ts-expect-error: a namespace is a string.
Subscription.to('', 'v1', 'Pod').namespace(3);
// @ts-expect-error: Limits wants milliseconds as a number.
new Limits().callDeadlineMs('1s');
// @ts-expect-error: there is no log.notice.
log.notice('x');
// @ts-expect-error: there is no verb 'list'.
WriteRule.to('', 'Pod').verbs('list');
// @ts-expect-error: the patch type is merge, json or strategic.
new kube.Api('', 'v1', 'Pod').patch('p', {}, { type: 'yaml' });
// @ts-expect-error: a KubeError kind is a case of the contract's variant.
new KubeError('gone', 'x');
const reason: string = testing.takeEvents()[0]!.reason;
const verb: 'get' | 'create' | 'update' | 'patch' | 'apply' | 'delete' = testing.takeKubeCalls()[0]!.verb;
testing.scriptKube({ verb: 'get', throws: new KubeError('not-found', 'x'), times: 1 });
testing.http.respond('https://hooks.example.com/', new Response('ok', { status: 202 }));
testing.declare(Typed);
const count: number | undefined = testing.metric('alerts_total', 'shop');
const delays: number[] = testing.takeRequeues();
const posted: string = testing.http.takeRequests()[0]!.url;
void [reason, verb, count, delays, posted];
// @ts-expect-error: a scripted failure is one of the host's kinds.
testing.http.fail('https://x/', 'sleepy');
// @ts-expect-error: a counter has no set.
metrics.counter('alerts_total').set(1);
// @ts-expect-error: takeMessages gives strings.
const wrong: number[] = testing.takeMessages();
void wrong;

/** An admission plugin: validates and mutates Pods. */
export class Admitting extends Handler {
  override manifest(): Manifest {
    return new Manifest('admitting', '0.1.0')
      .validating(new Webhook().rule(AdmissionRule.to(kinds.Pod).create().operation('update')).timeoutSeconds(5))
      .mutating(new Webhook().rule(AdmissionRule.to('', 'v1', 'Pod').create()).failurePolicy(FailurePolicy.Ignore).inNamespaces('shop'));
  }

  override validate(review: AdmissionReview): Verdict {
    const pod = review.object as PodObject;
    const images = (pod.spec?.initContainers ?? []).concat(pod.spec?.containers ?? []).map((container) => container.image ?? '');
    const user: string = review.userInfo.username;
    return images.some((image) => image.endsWith(':latest')) ? Verdict.deny(`no latest (${user})`, 422) : Verdict.allow().warn(`${review.operation} checked`);
  }

  override async mutate(review: AdmissionReview): Promise<Mutation> {
    if (review.operation === 'DELETE') {
      return Mutation.none();
    }
    return review.dryRun ? Mutation.object({ ...review.object }) : Mutation.patch([{ op: 'add', path: '/metadata/labels/a', value: 'b' }]);
  }
}
const reviewed: AdmissionReview<PodObject> = testing.creating({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' } } as PodObject);
const allowed: boolean = new Admitting().validate(reviewed).allowed;
const code: number | undefined = Verdict.deny('no').code;
void [allowed, code, testing.updating(reviewed.object, reviewed.object).oldObject, testing.deleting(reviewed.object).key];
// @ts-expect-error: an operation is CREATE, UPDATE, DELETE or CONNECT.
AdmissionRule.to(kinds.Pod).operation('PATCH');
// @ts-expect-error: the failure policy is fail or ignore.
new Webhook().failurePolicy('retry');
// @ts-expect-error: a JSON Patch operation has an op.
Mutation.patch([{ path: '/x' }]);

// A controller written with the reconcile API.
export class Mirrors extends Reconciler {
  controller(): Controller {
    return new Controller(kinds.Deployment, new Manifest('mirrors', '0.1.0'))
      .owns(kinds.ReplicaSet)
      .watches(kinds.ConfigMap, (cm) => [new Request(cm.metadata.namespace, 'web')]);
  }

  async reconcile(request: Request, object: any): Promise<Action> {
    if (object === undefined) return Action.awaitChange();
    const conditions: any[] = [];
    setCondition(conditions, { type: 'Ready', status: 'True', reason: 'Synced', lastTransitionTime: 'now' });
    log.info(`reconciling ${request.toString()} ${request.namespace ?? ''}`);
    return finalizer(object, 'example.com/cleanup', ({ type }) =>
      type === 'apply' ? Action.requeueAfter(60_000) : undefined,
    );
  }
}
// @ts-expect-error: a delay is a number of milliseconds
Action.requeueAfter('1m');
// @ts-expect-error: a map returns Requests
new Controller(kinds.Deployment, new Manifest('x', '0.1.0')).watches(kinds.ConfigMap, () => 'web');
