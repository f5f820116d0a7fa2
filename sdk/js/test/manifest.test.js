import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Delivery, EVENTS, GroupVersionKind, Limits, Manifest, Subscription, Verb, WriteRule } from '../src/index.js';

test('the builder fills every field of the manifest record', () => {
  const record = new Manifest('watcher', '0.3.0')
    .subscribe(
      Subscription.to('', 'v1', 'Pod')
        .namespace('web')
        .labels('app=web')
        .fields('spec.nodeName=node-1')
        .resyncPeriodMs(30_000)
        .coalesced(),
    )
    .subscribeKind('example.com', 'v1', 'Widget')
    .limits(new Limits().callDeadlineMs(250).memoryBytes(1 << 24))
    .capability('net')
    .toRecord();
  assert.deepEqual(record, {
    name: 'watcher',
    version: '0.3.0',
    subscriptions: [
      {
        kind: { group: '', version: 'v1', kind: 'Pod' },
        namespace: 'web',
        labelSelector: 'app=web',
        fieldSelector: 'spec.nodeName=node-1',
        resyncPeriodMs: 30_000n,
        delivery: 'coalesced',
      },
      {
        kind: { group: 'example.com', version: 'v1', kind: 'Widget' },
        namespace: undefined,
        labelSelector: undefined,
        fieldSelector: undefined,
        resyncPeriodMs: undefined,
        delivery: 'every-event',
      },
    ],
    limits: { callDeadlineMs: 250, memoryBytes: 16_777_216n },
    capabilities: ['net'],
    writes: [],
    metrics: [],
    indexes: [],
  });
});

test('defaults are unscoped, every event, no limits and no capabilities', () => {
  const record = new Manifest('a', '1').toRecord();
  assert.deepEqual(record.subscriptions, []);
  assert.deepEqual(record.limits, { callDeadlineMs: undefined, memoryBytes: undefined });
  assert.deepEqual(record.capabilities, []);
  assert.equal(new Subscription(new GroupVersionKind('apps', 'v1', 'ReplicaSet')).toRecord().delivery, Delivery.EveryEvent);
});

test('a subscription takes a plain kind record and an explicit delivery mode', () => {
  const record = new Subscription({ group: 'apps', version: 'v1', kind: 'Deployment' }).delivery('coalesced').toRecord();
  assert.deepEqual(record.kind, { group: 'apps', version: 'v1', kind: 'Deployment' });
  assert.equal(record.delivery, 'coalesced');
  assert.throws(() => Subscription.to('', 'v1', 'Pod').delivery('sometimes'), /delivery must be one of every-event, coalesced/);
});

test('oversized numbers saturate at the WIT integer maxima', () => {
  assert.equal(new Limits().callDeadlineMs(2 ** 40).toRecord().callDeadlineMs, 0xffff_ffff);
  assert.equal(Subscription.to('', 'v1', 'Pod').resyncPeriodMs(2n ** 70n).toRecord().resyncPeriodMs, 2n ** 64n - 1n);
  assert.equal(new Limits().memoryBytes(2n ** 64n).toRecord().memoryBytes, 2n ** 64n - 1n);
});

test('wrong argument types are refused when the manifest is built, naming the argument', () => {
  assert.throws(() => new Manifest('a', 1), /plugin version must be a string, got number/);
  assert.throws(() => Subscription.to('', 'v1', 'Pod').namespace(undefined), /namespace must be a string/);
  assert.throws(() => new Limits().callDeadlineMs(1.5), /call deadline \(ms\) must be a whole number/);
  assert.throws(() => new Limits().memoryBytes(-1), /memory \(bytes\) must not be negative/);
  assert.throws(() => new Manifest('a', '1').subscribe({ kind: 'Pod' }), /subscribe\(\) takes a Subscription/);
  assert.throws(() => new Manifest('a', '1').limits({ callDeadlineMs: 5 }), /limits\(\) takes a Limits/);
  assert.throws(() => Subscription.to('', 'v1', 7), /kind must be a string, got number/);
});

test('kinds format, compare and come from objects', () => {
  const deployment = new GroupVersionKind('apps', 'v1', 'Deployment');
  assert.equal(String(deployment), 'apps/v1/Deployment');
  assert.equal(String(new GroupVersionKind('', 'v1', 'Pod')), 'v1/Pod');
  assert.equal(deployment.apiVersion(), 'apps/v1');
  assert.ok(GroupVersionKind.ofObject({ apiVersion: 'apps/v1', kind: 'Deployment' }).equals(deployment));
  assert.deepEqual(GroupVersionKind.from({ apiVersion: 'v1', kind: 'ConfigMap' }).toRecord(), {
    group: '',
    version: 'v1',
    kind: 'ConfigMap',
  });
  assert.throws(() => GroupVersionKind.ofObject({ kind: 'Pod' }), /no string apiVersion and kind/);
  assert.ok(Object.isFrozen(deployment));
});

test('write rules and capabilities go into the record', () => {
  const record = new Manifest('scaler', '1')
    .subscribe(Subscription.to('apps', 'v1', 'Deployment'))
    .write(WriteRule.to('apps', 'Deployment').verbs(Verb.Get, 'patch', 'patch').namespaces('shop', 'web', 'shop'))
    .write(new WriteRule({ group: '', version: 'v1', kind: 'Namespace' }).verbs('apply').allNamespaces())
    .write(WriteRule.to('apps', 'Deployment').verbs('update').status().namespaces('shop'))
    .capability(EVENTS)
    .capability('events')
    .toRecord();
  assert.deepEqual(record.writes, [
    { verbs: ['get', 'patch'], group: 'apps', kind: 'Deployment', subresource: undefined, namespaces: ['shop', 'web'] },
    { verbs: ['apply'], group: '', kind: 'Namespace', subresource: undefined, namespaces: ['*'] },
    { verbs: ['update'], group: 'apps', kind: 'Deployment', subresource: 'status', namespaces: ['shop'] },
  ]);
  assert.deepEqual(record.capabilities, ['events'], 'asking twice is asking once');
  assert.throws(() => WriteRule.to('', 'Pod').verbs('list'), /unknown verb list: one of get, create, update, patch, apply, delete/);
  assert.throws(() => WriteRule.to('', 'Pod').namespaces(''), /a namespace must not be empty/);
  assert.throws(() => WriteRule.to('', 3), /write rule kind must be a string/);
  assert.throws(() => new Manifest('a', '1').write({}), /write\(\) takes a WriteRule/);
});
