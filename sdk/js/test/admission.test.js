// The admission API: webhooks in the manifest and what `declare` answers,
// reviews, verdicts and mutations through the component's glue (a throw
// becomes err), the defaults of a plugin that does not admit, and the fake
// host's review builders.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  AdmissionReview,
  AdmissionRule,
  FailurePolicy,
  Handler,
  HeraldError,
  Manifest,
  Mutation,
  Operation,
  Subscription,
  Verdict,
  Webhook,
  kinds,
} from '../src/index.js';
import { bindPlugin } from '../src/component.js';
import * as testing from '../src/testing.js';

const pod = (name, ...images) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'shop' },
  spec: { containers: images.map((image, index) => ({ name: `app-${index}`, image })) },
});

/** Validates Pods by their images; mutates them by their labels. */
class Pods extends Handler {
  manifest() {
    return new Manifest('pods', '0.1.0')
      .validating(new Webhook().rule(AdmissionRule.to(kinds.Pod).create().update()))
      .mutating(
        new Webhook()
          .rule(AdmissionRule.to(kinds.Pod).create())
          .rule(AdmissionRule.to('apps', 'v1', 'Deployment').operation('update').subresource('scale'))
          .inNamespaces('shop', 'web')
          .objectsLabelled('app=web')
          .failurePolicy(FailurePolicy.Ignore)
          .timeoutSeconds(5),
      );
  }

  validate(review) {
    const images = review.object.spec.containers.map((container) => container.image);
    const latest = images.filter((image) => image.endsWith(':latest'));
    if (latest.length > 0) {
      return Verdict.deny(`not latest: ${latest.join(', ')}`, review.operation === Operation.Update ? 409 : undefined);
    }
    return images.filter((image) => !image.includes('/')).reduce((verdict, image) => verdict.warn(`${image} has no registry`), Verdict.allow());
  }

  async mutate(review) {
    await null;
    const { object } = review;
    if (object.metadata.name === 'bad') {
      throw new HeraldError('refusing', { cause: new Error('a bad name') });
    }
    if (object.metadata.labels === undefined) {
      return Mutation.patch([{ op: 'add', path: '/metadata/labels', value: { team: 'web' } }]);
    }
    return Mutation.object({ ...object, metadata: { ...object.metadata, labels: { ...object.metadata.labels, team: 'web' } } }).warn('labelled');
  }
}

test('declare answers the webhooks of the manifest', () => {
  const { declare } = bindPlugin(Pods).admission;
  assert.deepEqual(declare(), {
    validating: {
      rules: [{ kind: { group: '', version: 'v1', kind: 'Pod' }, operations: ['create', 'update'], subresource: undefined }],
      namespaceSelector: undefined,
      objectSelector: undefined,
      failurePolicy: 'fail',
      timeoutSeconds: undefined,
    },
    mutating: {
      rules: [
        { kind: { group: '', version: 'v1', kind: 'Pod' }, operations: ['create'], subresource: undefined },
        { kind: { group: 'apps', version: 'v1', kind: 'Deployment' }, operations: ['update'], subresource: 'scale' },
      ],
      namespaceSelector: 'kubernetes.io/metadata.name in (shop,web)',
      objectSelector: 'app=web',
      failurePolicy: 'ignore',
      timeoutSeconds: 5,
    },
  });
  assert.deepEqual(new Pods().manifest().problems(), [], 'an admission plugin may subscribe to nothing');
});

test('validate allows, denies with a message and code, and warns, through the glue', () => {
  const { validate } = bindPlugin(Pods).admission;
  assert.deepEqual(validate(testing.creating(pod('a', 'registry.example.com/web:1')).toRecord()), {
    tag: 'ok',
    val: { allowed: true, code: undefined, message: '', warnings: [] },
  });
  assert.deepEqual(validate(testing.creating(pod('a', 'web:1', 'registry.example.com/db:2')).toRecord()).val.warnings, ['web:1 has no registry']);
  assert.deepEqual(validate(testing.creating(pod('a', 'web:latest', 'db:latest')).toRecord()), {
    tag: 'ok',
    val: { allowed: false, code: undefined, message: 'not latest: web:latest, db:latest', warnings: [] },
  });
  const updated = validate(testing.updating(pod('a', 'web:1'), pod('a', 'web:latest')).toRecord());
  assert.deepEqual([updated.val.allowed, updated.val.code], [false, 409]);
  const broken = validate(testing.creating({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'no-spec' } }).toRecord());
  assert.equal(broken.tag, 'err');
  assert.match(broken.val, /^TypeError: Cannot read properties of undefined/);
});

test('mutate answers a JSON Patch or the changed object; a rejection is err', async () => {
  const { mutate } = bindPlugin(Pods).admission;
  assert.deepEqual(await mutate(testing.creating(pod('a', 'web:1')).toRecord()), {
    tag: 'ok',
    val: {
      verdict: { allowed: true, code: undefined, message: '', warnings: [] },
      change: { tag: 'json-patch', val: '[{"op":"add","path":"/metadata/labels","value":{"team":"web"}}]' },
    },
  });
  const labelled = { ...pod('a', 'web:1'), metadata: { name: 'a', namespace: 'shop', labels: { app: 'web' } } };
  const changed = await mutate(testing.creating(labelled).toRecord());
  assert.equal(changed.val.change.tag, 'object');
  assert.deepEqual(JSON.parse(changed.val.change.val).metadata.labels, { app: 'web', team: 'web' });
  assert.deepEqual(changed.val.verdict.warnings, ['labelled']);
  assert.deepEqual(await mutate(testing.creating(pod('bad', 'web:1')).toRecord()), { tag: 'err', val: 'refusing: a bad name' });
  assert.deepEqual(Mutation.none().toRecord().change, { tag: 'none' });
  assert.deepEqual(Mutation.deny('no', 400).toRecord().verdict, { allowed: false, code: 400, message: 'no', warnings: [] });
});

test('a decision that is not a Verdict or a Mutation is err', () => {
  const sloppy = { manifest: () => new Manifest('sloppy', '1'), validate: () => true, mutate: () => Verdict.allow() };
  const { validate, mutate } = bindPlugin(sloppy).admission;
  const record = testing.creating(pod('a', 'web:1')).toRecord();
  assert.deepEqual(validate(record), { tag: 'err', val: 'TypeError: validate() must return a Verdict, got boolean' });
  assert.deepEqual(mutate(record), { tag: 'err', val: 'TypeError: mutate() must return a Mutation, got object' });
});

test('a plugin that does not admit declares no webhook and answers err', () => {
  class Watcher extends Handler {
    manifest() {
      return new Manifest('watcher', '1').subscribe(Subscription.to(kinds.Pod));
    }
  }
  const record = testing.creating(pod('a', 'web:1')).toRecord();
  const { admission } = bindPlugin(Watcher);
  assert.deepEqual(admission.declare(), { validating: undefined, mutating: undefined });
  assert.deepEqual(admission.validate(record), { tag: 'err', val: 'the plugin does not admit: Watcher defines no validate()' });
  assert.deepEqual(admission.mutate(record), { tag: 'err', val: 'the plugin does not admit: Watcher defines no mutate()' });
  const object = bindPlugin({ manifest: () => new Manifest('object', '1') }).admission;
  assert.deepEqual(object.validate(record), { tag: 'err', val: 'the plugin does not admit: its default export defines no validate()' });
});

test('a review exposes every field, parses objects once, and round-trips its record', () => {
  const update = testing.updating(pod('web-0', 'web:1'), pod('web-0', 'web:2'));
  assert.deepEqual(
    [update.uid, update.kind.toString(), update.resource, update.subresource, update.name, update.namespace, update.key, update.operation],
    ['00000000-0000-0000-0000-000000000001', 'v1/Pod', 'pods', '', 'web-0', 'shop', 'shop/web-0', 'UPDATE'],
  );
  assert.deepEqual(update.userInfo, { username: 'admin', uid: '', groups: [], extra: {} });
  assert.deepEqual([update.dryRun, update.optionsJson, update.options], [false, undefined, undefined]);
  assert.equal(update.object.spec.containers[0].image, 'web:2');
  assert.equal(update.oldObject.spec.containers[0].image, 'web:1');
  assert.equal(update.object, update.object, 'parsed once');

  const record = {
    uid: 'u-1',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    resource: 'pods',
    subresource: 'exec',
    name: 'web-0',
    namespace: 'shop',
    operation: 'connect',
    userInfo: { username: 'alice', uid: '42', groups: ['dev'], extra: [['scopes', ['read', 'write']]] },
    object: '{"kind":"PodExecOptions"}',
    oldObject: undefined,
    dryRun: true,
    options: '{"kind":"CreateOptions"}',
  };
  const connect = new AdmissionReview(record);
  assert.equal(connect.operation, Operation.Connect);
  assert.deepEqual(connect.userInfo.extra, { scopes: ['read', 'write'] });
  assert.deepEqual([connect.subresource, connect.dryRun, connect.options.kind], ['exec', true, 'CreateOptions']);
  assert.deepEqual(connect.toRecord(), record);
  assert.throws(() => connect.oldObject, /^HeraldError: the review carries no oldObject$/);
  const deleted = testing.deleting(pod('web-0', 'web:1'));
  assert.deepEqual([deleted.operation, deleted.objectJson, deleted.oldObject.metadata.name], ['DELETE', undefined, 'web-0']);
  assert.throws(() => deleted.object, /the review carries no object/);
  assert.throws(() => new AdmissionReview({ ...record, object: '{nope' }).object, /decoding the review's object: /);
  const created = testing.creating({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } });
  assert.deepEqual([created.operation, created.resource, created.namespace, created.key], ['CREATE', 'namespaces', '', 'shop']);
});

test('builders check what they are given; verdicts and mutations are values', () => {
  assert.throws(() => AdmissionRule.to(kinds.Pod).operation('patch'), /unknown operation patch: one of CREATE, UPDATE, DELETE, CONNECT/);
  assert.throws(() => new Webhook().rule(kinds.Pod), /rule\(\) takes an AdmissionRule/);
  assert.throws(() => new Webhook().failurePolicy('retry'), /the failure policy is one of fail, ignore/);
  assert.throws(() => new Manifest('a', '1').validating(AdmissionRule.to(kinds.Pod)), /validating\(\) takes a Webhook/);
  assert.throws(() => Verdict.deny('no', 200), /a refusal's code is 400 to 599, got 200/);
  assert.throws(() => Mutation.patch({ op: 'add' }), /a JSON Patch is an array of operations/);
  assert.throws(() => new Mutation(Verdict.allow(), { jsonPatch: [], changedObject: {} }), /not both/);
  const allow = Verdict.allow();
  assert.deepEqual([allow.warn('a').warn('b').warnings, allow.warnings], [['a', 'b'], []]);
  assert.deepEqual(AdmissionRule.to(kinds.Pod).create().operation('CREATE', 'delete').connect().operations, ['CREATE', 'DELETE', 'CONNECT']);
  const manifest = new Manifest('a', '1')
    .validating(new Webhook())
    .mutating(new Webhook().rule(AdmissionRule.to(kinds.Pod).create()).rule(AdmissionRule.to(kinds.Pod)).timeoutSeconds(31));
  assert.deepEqual(manifest.problems(), [
    'admission.validating.rules is empty: a webhook admits at least one kind',
    'admission.mutating.rules[1].operations is empty: name at least one',
    "admission.mutating.timeoutSeconds must be 1 to 30 (Kubernetes' bounds)",
  ]);
});
