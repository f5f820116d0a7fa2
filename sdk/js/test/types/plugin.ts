// A TypeScript plugin that must type-check against types/*.d.ts (run by
// test/types.test.js with tsc --noEmit). The lines marked @ts-expect-error
// must fail to type-check: they prove the declarations are not `any`.
import { Handler, Limits, Manifest, Subscription, cache, config, log, objects, type Event, type Update } from '@herald/sdk';
import * as testing from '@herald/sdk/testing';

interface Pod {
  apiVersion: 'v1';
  kind: 'Pod';
  metadata: { name: string; namespace: string; labels?: Record<string, string> };
  spec?: { nodeName?: string };
}

export default class Typed extends Handler {
  seen = 0;

  override manifest(): Manifest {
    const settings = config.get<{ namespace?: string }>() ?? {};
    const pods = Subscription.to('', 'v1', 'Pod').labelSelector('app=web').coalesced();
    if (settings.namespace !== undefined) {
      pods.namespace(settings.namespace);
    }
    return new Manifest('typed', '0.1.0')
      .subscribe(pods)
      .limits(new Limits().callDeadlineMs(500).memoryBytes(64n * 1024n * 1024n))
      .capability('none');
  }

  override onAdd(event: Event): void {
    this.seen += 1;
    const pod = event.object as unknown as Pod;
    const sets = cache.list({ group: 'apps', version: 'v1', kind: 'ReplicaSet' }, event.namespace, 'app=web');
    log.info(`added pod=${event.key} node=${pod.spec?.nodeName ?? '-'} replicaSets=${sets.length} name=${objects.name(sets[0])}`);
  }

  override async onUpdate(update: Update): Promise<void> {
    const labels: Record<string, string> = objects.labels(update.new);
    if (update.isResync) {
      return;
    }
    log.debug(labels);
  }
}

const record = new Manifest('typed', '1').subscribe(Subscription.to('', 'v1', 'Pod')).toRecord();
const delivery: 'every-event' | 'coalesced' = record.subscriptions[0]!.delivery;
const resync: bigint | undefined = record.subscriptions[0]!.resyncPeriodMs;
const result = await testing.dispatch(Typed, testing.added({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'a', namespace: 'b' } }));
const message: string | undefined = result.tag === 'err' ? result.val : undefined;
void [delivery, resync, message];

// @ts-expect-error: a namespace is a string.
Subscription.to('', 'v1', 'Pod').namespace(3);
// @ts-expect-error: Limits wants milliseconds as a number.
new Limits().callDeadlineMs('1s');
// @ts-expect-error: there is no log.notice.
log.notice('x');
// @ts-expect-error: takeMessages gives strings.
const wrong: number[] = testing.takeMessages();
void wrong;
