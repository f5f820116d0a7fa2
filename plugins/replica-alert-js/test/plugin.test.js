// replica-alert against the SDK's fake host: the ConfigMap applied, the
// Events, the counter, the webhook and the requeue, episode by episode.
import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';
import { KubeError } from '@herald/sdk';
import * as testing from '@herald/sdk/testing';
import ReplicaAlert, { ALERTS } from '../src/plugin.js';

const HOOK = 'https://hooks.example.com/replicas';

function deployment(available, desired = 3, name = 'web') {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'shop', uid: `uid-${name}`, resourceVersion: '7' },
    spec: { replicas: desired },
    status: { availableReplicas: available },
  };
}

let plugin;

beforeEach(() => {
  testing.reset();
  testing.setConfig({ webhookUrl: HOOK });
  testing.enforce(ReplicaAlert); // kube calls and Events must match the manifest
  testing.declare(ReplicaAlert); // metric updates checked as the host checks them
  testing.http.grant('https://hooks.example.com');
  testing.http.respond(HOOK, new Response(null, { status: 202 }));
  plugin = new ReplicaAlert();
});

/** Forgets what was recorded so far. */
function forget() {
  testing.takeKubeCalls();
  testing.takeEvents();
  testing.http.takeRequests();
  testing.takeRequeues();
  testing.takeMessages();
}

test('the manifest asks for what it uses', () => {
  const record = testing.manifestOf(ReplicaAlert);
  assert.deepEqual(record.capabilities, ['events', 'http']);
  assert.deepEqual(
    record.writes.map((rule) => [rule.kind, rule.verbs, rule.namespaces]),
    [['ConfigMap', ['apply'], ['*']]],
  );
  assert.equal(record.subscriptions[0].delivery, 'coalesced');
  assert.deepEqual(record.metrics.map((metric) => [metric.name, metric.kind, metric.labelNames]), [[ALERTS, 'counter', ['namespace']]]);
});

test('a healthy deployment is left alone', async () => {
  await plugin.onAdd(testing.added(deployment(3)));
  assert.deepEqual(testing.takeKubeCalls(), []);
  assert.deepEqual(testing.takeEvents(), []);
  assert.deepEqual(testing.http.requests(), []);
  assert.deepEqual(testing.requeues(), []);
  assert.deepEqual(testing.metrics(), []);
});

test('degraded: writes, records, counts, posts and requeues', async () => {
  await plugin.onAdd(testing.added(deployment(3)));
  await plugin.onUpdate(testing.updated(deployment(3), deployment(1)));
  const [apply] = testing.takeKubeCalls();
  assert.deepEqual([apply.verb, apply.kind.kind, apply.key, apply.force], ['apply', 'ConfigMap', 'shop/replica-alert-web', true]);
  assert.deepEqual(apply.object.data, { deployment: 'web', state: 'degraded', desired: '3', available: '1' });
  assert.equal(apply.object.metadata.ownerReferences[0].uid, 'uid-web');
  const [event] = testing.takeEvents();
  assert.deepEqual(
    [event.eventType, event.reason, event.action, event.note],
    ['warning', 'ReplicasUnavailable', 'Alerted', '1 of 3 replicas available'],
  );
  assert.deepEqual([event.regarding.kind.kind, event.regarding.name, event.regarding.uid], ['Deployment', 'web', 'uid-web']);
  assert.equal(testing.metric(ALERTS, 'shop'), 1);
  const [post] = testing.http.takeRequests();
  assert.deepEqual([post.method, post.url, post.headers['content-type']], ['POST', HOOK, 'application/json']);
  assert.deepEqual(post.json(), {
    text: 'shop/web: 1 of 3 replicas available',
    deployment: 'shop/web',
    state: 'degraded',
    desired: 3,
    available: 1,
  });
  assert.deepEqual(testing.takeRequeues(), [30_000]);
  assert.deepEqual(testing.takeMessages(), [
    'degraded deployment=shop/web available=1 desired=3',
    'posted deployment=shop/web state=degraded status=202',
  ]);
});

test('the re-check refreshes the ConfigMap only', async () => {
  await plugin.onUpdate(testing.updated(deployment(3), deployment(1)));
  forget();
  await plugin.onUpdate(testing.resynced(deployment(2)));
  assert.deepEqual(testing.takeKubeCalls().map((call) => call.object.data.available), ['2']);
  assert.deepEqual(testing.takeEvents(), []);
  assert.deepEqual(testing.http.requests(), []);
  assert.equal(testing.metric(ALERTS, 'shop'), 1);
  assert.deepEqual(testing.takeRequeues(), [30_000]);
});

test('a recovery is written, recorded and posted once', async () => {
  await plugin.onUpdate(testing.updated(deployment(3), deployment(1)));
  forget();
  await plugin.onUpdate(testing.updated(deployment(1), deployment(3)));
  await plugin.onUpdate(testing.updated(deployment(3), deployment(3)));
  const [apply] = testing.takeKubeCalls();
  assert.equal(apply.object.data.state, 'ok');
  const [event] = testing.takeEvents();
  assert.deepEqual([event.eventType, event.reason, event.action], ['normal', 'ReplicasAvailable', 'Recovered']);
  assert.deepEqual(testing.http.takeRequests().map((post) => post.json().state), ['recovered']);
  assert.deepEqual(testing.requeues(), []);
  assert.equal(testing.metric(ALERTS, 'shop'), 1);
});

test('a failed webhook fails the call, and the retry posts once', async () => {
  testing.http.respondOnce(HOOK, new Response('down', { status: 503 }));
  testing.http.failOnce(HOOK, 'timeout');
  await assert.rejects(plugin.onUpdate(testing.updated(deployment(3), deployment(1))), {
    message: `POST ${HOOK}: unexpected status 503: down`,
  });
  // The host retries the Deployment with its newest state; what it records:
  assert.deepEqual(await testing.dispatch({ manifest: () => plugin.manifest(), onUpdate: (update) => plugin.onUpdate(update) }, testing.resynced(deployment(1))), {
    tag: 'err',
    val: `POST ${HOOK}: TypeError: NetworkError when attempting to fetch resource: timeout (scripted)`,
  });
  await plugin.onUpdate(testing.resynced(deployment(1)));
  await plugin.onUpdate(testing.resynced(deployment(1)));
  assert.equal(testing.http.takeRequests().length, 3, 'two failures, one success, then nothing');
  assert.equal(testing.takeEvents().length, 1);
  assert.equal(testing.metric(ALERTS, 'shop'), 1);
  assert.deepEqual(testing.takeRequeues(), [30_000, 30_000], 'asked by the calls that succeeded');
});

test('a recovery whose webhook fails is posted by the retry', async () => {
  await plugin.onUpdate(testing.updated(deployment(3), deployment(1)));
  forget();
  testing.http.failOnce(HOOK, 'connection');
  await assert.rejects(plugin.onUpdate(testing.updated(deployment(1), deployment(3))));
  await plugin.onUpdate(testing.resynced(deployment(3)));
  assert.deepEqual(testing.http.takeRequests().map((post) => post.json().state), ['recovered', 'recovered']);
  assert.deepEqual(testing.takeEvents().map((event) => event.reason), ['ReplicasAvailable']);
});

test('without a webhook, alerts are logged, recorded and counted', async () => {
  testing.clearConfig();
  await plugin.onUpdate(testing.updated(deployment(3), deployment(0)));
  assert.deepEqual(testing.http.requests(), []);
  assert.equal(testing.takeEvents().length, 1);
  assert.equal(testing.metric(ALERTS, 'shop'), 1);
});

test('too little time left defers the webhook to a retry', async () => {
  testing.setRemainingMs(50);
  await assert.rejects(plugin.onUpdate(testing.updated(deployment(3), deployment(1))), /no time left to post degraded for shop\/web/);
  assert.deepEqual(testing.http.requests(), []);
  testing.setRemainingMs(900);
  await plugin.onUpdate(testing.resynced(deployment(1)));
  assert.equal(testing.http.takeRequests().length, 1);
});

test('a deleted deployment is forgotten', async () => {
  await plugin.onUpdate(testing.updated(deployment(3), deployment(1)));
  plugin.onDelete(testing.deleted(deployment(1)));
  assert.equal(plugin.degraded.size + plugin.recovering.size, 0);
});

test('a refused apply fails the call', async () => {
  testing.scriptKube({ verb: 'apply', throws: new KubeError('conflict', 'someone else owns data.state'), times: 1 });
  await assert.rejects(plugin.onUpdate(testing.updated(deployment(3), deployment(1))), (error) => error instanceof KubeError && error.kind === 'conflict');
  assert.deepEqual(testing.takeEvents(), []);
  assert.deepEqual(testing.http.requests(), []);
});

test('a bad configuration fails every call', async () => {
  testing.setConfig({ webhook: HOOK });
  await assert.rejects(plugin.onAdd(testing.added(deployment(1))), /the plugin configuration/);
});

test('the recorded events replay through the fake host as through the component', async () => {
  const { readFile } = await import('node:fs/promises');
  const text = await readFile(new URL('../events.jsonl', import.meta.url), 'utf8');
  const replayed = await testing.replay(ReplicaAlert, text);
  assert.deepEqual(replayed.map((event) => event.result.tag), ['ok', 'ok', 'ok', 'ok', 'ok', 'ok']);
  assert.deepEqual(replayed.map((event) => event.logs.map((line) => line.message)), [
    [],
    ['degraded deployment=shop/web available=1 desired=3', 'posted deployment=shop/web state=degraded status=202'],
    [],
    ['recovered deployment=shop/web available=3 desired=3', 'posted deployment=shop/web state=recovered status=202'],
    ['degraded deployment=shop/api available=0 desired=2', 'posted deployment=shop/api state=degraded status=202'],
    [],
  ]);
});
