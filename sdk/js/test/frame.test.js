// World 0.7.0's delivery frames: the reader (src/frame.js), the events it
// makes (decoded lazily), and the `delivery` export's loop over a frame.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runInNewContext } from 'node:vm';
import { Context, Event, Handler, HeraldError, Manifest, Update } from '../src/index.js';
import { bindPlugin, deliveryOptions } from '../src/component.js';
import { ADDED, DELETED, FrameError, FrameReader, UPDATED, write } from '../src/frame.js';
import * as testing from '../src/testing.js';

const deployment = (name, rv, extra = {}) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, namespace: 'shop', resourceVersion: rv },
  ...extra,
});

function context(object, flags = {}) {
  return testing.contextFor(object, flags);
}

/** Every notification of `frame`, as [method, notification]; the FrameError if the frame breaks. */
function readAll(frame) {
  const reader = new FrameReader(frame);
  const read = [];
  try {
    for (let notification = reader.next(); notification !== undefined; notification = reader.next()) {
      read.push([reader.method, notification]);
    }
  } catch (error) {
    return { read, error };
  }
  return { read, error: undefined };
}

test('a frame of several notifications reads back as written, in order', () => {
  const a = deployment('a', '1');
  const b = deployment('b', '7', { spec: { note: 'é ✓ 雪' } });
  const node = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-1', resourceVersion: '3' } };
  const frame = write([
    { what: ADDED, context: context(a, { isInitialList: true }), json: JSON.stringify(a) },
    { what: UPDATED, context: context(b), json: JSON.stringify(b), oldJson: JSON.stringify(a) },
    { what: DELETED, context: context(node, { finalStateUnknown: true }), json: JSON.stringify(node) },
  ]);
  const { read, error } = readAll(frame);
  assert.equal(error, undefined);
  assert.deepEqual(
    read.map(([method]) => method),
    ['onAdd', 'onUpdate', 'onDelete'],
  );
  const [[, added], [, updated], [, deleted]] = read;
  assert.ok(added instanceof Event && updated instanceof Update && deleted instanceof Event);

  assert.equal(String(added.kind), 'apps/v1/Deployment');
  assert.equal(added.resource, 'deployments');
  assert.equal(added.key, 'shop/a');
  assert.equal(added.namespace, 'shop');
  assert.equal(added.name, 'a');
  assert.equal(added.resourceVersion, '1');
  assert.deepEqual([added.isInitialList, added.isResync, added.finalStateUnknown], [true, false, false]);
  assert.deepEqual(added.object, a);

  assert.equal(updated.key, 'shop/b');
  assert.equal(updated.resourceVersion, '7');
  assert.equal(updated.newJson, JSON.stringify(b));
  assert.equal(updated.oldJson, JSON.stringify(a));
  assert.equal(updated.new.spec.note, 'é ✓ 雪', 'UTF-8 decodes');
  assert.equal(updated.old.metadata.resourceVersion, '1');

  assert.equal(deleted.key, 'node-1');
  assert.equal(deleted.namespace, undefined);
  assert.equal(deleted.name, 'node-1');
  assert.equal(String(deleted.kind), 'v1/Node');
  assert.deepEqual([deleted.isInitialList, deleted.isResync, deleted.finalStateUnknown], [false, false, true]);
  assert.equal(deleted.json, JSON.stringify(node));
});

test('each flag reads as its own property, and the context is built whole on demand', () => {
  const object = deployment('web', '5');
  for (const [flags, expected] of [
    [{}, [false, false, false]],
    [{ isInitialList: true }, [true, false, false]],
    [{ isResync: true }, [false, true, false]],
    [{ finalStateUnknown: true }, [false, false, true]],
    [{ isInitialList: true, isResync: true, finalStateUnknown: true }, [true, true, true]],
  ]) {
    const sent = context(object, flags);
    const [[, event]] = readAll(write([{ what: ADDED, context: sent, json: '{}' }])).read;
    assert.deepEqual([event.isInitialList, event.isResync, event.finalStateUnknown], expected, JSON.stringify(flags));
    assert.ok(event.context instanceof Context);
    assert.ok(Object.isFrozen(event.context));
    assert.equal(event.context, event.context, 'built once');
    assert.deepEqual({ ...event.context, kind: event.context.kind.toRecord() }, { ...sent, kind: sent.kind.toRecord() });
  }
  const frame = write([{ what: ADDED, context: context(object, { isResync: true }), json: '{}' }]);
  assert.equal(frame[4 + 1], 2, 'flag 2 is resync, in the second byte of the notification');
});

test('an update without the old state: oldJson is empty and old says why it is missing', () => {
  const old = deployment('web', '1');
  const now = deployment('web', '2');
  const frame = write([{ what: UPDATED, context: context(now), json: JSON.stringify(now) }]);
  assert.equal(frame[5] & 8, 0, 'flag 8 unset');
  const [[method, update]] = readAll(frame).read;
  assert.equal(method, 'onUpdate');
  assert.equal(update.newJson, JSON.stringify(now));
  assert.equal(update.new.metadata.resourceVersion, '2');
  assert.equal(update.oldJson, '');
  assert.throws(
    () => update.old,
    (error) => error instanceof HeraldError && error.message === "the old state was not delivered: the plugin's oldState is false",
  );
  const withOld = write([{ what: UPDATED, context: context(now), json: JSON.stringify(now), oldJson: JSON.stringify(old) }]);
  assert.equal(withOld[5] & 8, 8, 'flag 8 set');
  assert.equal(withOld.length, frame.length + 4 + JSON.stringify(old).length, 'a u32 length and the old bytes follow');
});

test('strings and objects are decoded only when read, and each once', (t) => {
  let decodes = 0;
  const decode = TextDecoder.prototype.decode;
  t.mock.method(TextDecoder.prototype, 'decode', function counted(...args) {
    decodes += 1;
    return decode.apply(this, args);
  });
  const parse = t.mock.method(JSON, 'parse');
  const object = deployment('web', '9');
  const frame = write([
    { what: ADDED, context: context(object), json: JSON.stringify(object) },
    { what: ADDED, context: context(object), json: '{"not json' },
  ]);
  const { read, error } = readAll(frame);
  assert.equal(error, undefined);
  assert.equal(decodes, 0, 'reading the frame decodes nothing');
  const [[, first], [, broken]] = read;
  assert.equal(first.key, 'shop/web');
  assert.equal(first.key, 'shop/web');
  assert.equal(decodes, 1, 'the key, once');
  assert.equal(first.isInitialList, false);
  assert.equal(decodes, 1, 'flags need no decoding');
  assert.equal(parse.mock.callCount(), 0);
  assert.equal(first.object.metadata.name, 'web');
  assert.equal(first.object, first.object);
  assert.equal(decodes, 2, 'the object text, once');
  assert.equal(parse.mock.callCount(), 1, 'the object parsed once');
  assert.throws(() => broken.object, /^HeraldError: decoding the object as JSON: /, 'a bad object fails only when read');
});

test('a frame that breaks off fails at the notification where it breaks, naming where', () => {
  const object = deployment('web', '1');
  const two = write([
    { what: ADDED, context: context(object), json: JSON.stringify(object) },
    { what: DELETED, context: context(object), json: JSON.stringify(object) },
  ]);
  const updated = write([{ what: UPDATED, context: context(object), json: '{}', oldJson: '{"a":1}' }]);
  const firstEnds = two.length / 2 + 2; // both notifications are the same size
  const cases = [
    [new Uint8Array([]), 0, /^malformed delivery frame: the frame ends at byte 0 inside its count$/],
    [new Uint8Array([1, 0]), 0, /^malformed delivery frame: the frame ends at byte 2 inside its count$/],
    [new Uint8Array([1, 0, 0, 0, 0]), 0, /^malformed delivery frame: the frame ends at byte 5 inside the head of a notification at byte 4$/],
    [two.subarray(0, 4 + 20), 0, /^malformed delivery frame: the frame ends at byte 24 inside the head of a notification at byte 4$/],
    [two.subarray(0, firstEnds + 31), 1, new RegExp(`the frame ends at byte ${firstEnds + 31} inside the head of a notification at byte ${firstEnds}$`)],
    [two.subarray(0, two.length - 3), 1, /^malformed delivery frame: a field of \d+ bytes at byte \d+ runs past the frame's end \(\d+ bytes\)$/],
    [updated.subarray(0, updated.length - 9), 0, /^malformed delivery frame: the frame ends at byte \d+ inside the old state's length$/],
    [updated.subarray(0, updated.length - 1), 0, /^malformed delivery frame: a field of 7 bytes at byte \d+ runs past the frame's end/],
  ];
  for (const [frame, handled, message] of cases) {
    const { read, error } = readAll(frame);
    assert.equal(read.length, handled, `${frame.length} bytes`);
    assert.ok(error instanceof FrameError, `${frame.length} bytes: ${error}`);
    assert.match(error.message, message);
  }
  const more = new Uint8Array([...two, 0, 0]);
  const trailing = readAll(more);
  assert.equal(trailing.read.length, 2);
  assert.equal(trailing.error.message, 'malformed delivery frame: 2 bytes follow its last notification');
  const flagged = two.slice();
  flagged[5] = 16;
  assert.match(readAll(flagged).error.message, /^malformed delivery frame: unknown flags 10 00 00 \(a newer host\?\)$/);
  const what = two.slice();
  what[4] = 3;
  assert.match(readAll(what).error.message, /^malformed delivery frame: unknown notification type 3/);
  assert.throws(() => new FrameReader('text'), /a delivery frame is a Uint8Array/);
  assert.throws(() => new FrameReader(new Int8Array(8)), /a delivery frame is a Uint8Array/);
  const otherRealm = runInNewContext('new Uint8Array([1, 0, 0, 0, 9])');
  assert.ok(!(otherRealm instanceof Uint8Array));
  assert.match(readAll(otherRealm).error.message, /inside the head of a notification at byte 4$/, "another realm's Uint8Array reads (as the component's bindings make it)");
  const foreign = readAll(runInNewContext('(bytes) => new Uint8Array(bytes)')(Array.from(two)));
  assert.deepEqual(foreign.read.map(([method, event]) => `${method} ${event.key} ${event.object.metadata.name}`), ['onAdd shop/web web', 'onDelete shop/web web']);
});

/** A plugin recording what it handled, failing on the objects named `bad` (rejecting on `reject`). */
class Recorder extends Handler {
  static maxBatch = 8;
  handled = [];

  manifest() {
    return new Manifest('recorder', '1');
  }

  onAdd(event) {
    this.handled.push(`add ${event.name}`);
    if (event.name === 'bad') {
      throw new HeraldError(`refused ${event.key}`);
    }
    if (event.name === 'reject') {
      return Promise.reject(new Error('rejected'));
    }
    if (event.name === 'slow') {
      return new Promise((resolve) => setTimeout(resolve, 5));
    }
    return undefined;
  }

  onDelete(event) {
    this.handled.push(`delete ${event.name}`);
  }
}

/** A frame adding each name (a leading `-` deletes it instead). */
function batch(...names) {
  return write(
    names.map((name) => {
      const deleting = name.startsWith('-');
      const object = deployment(deleting ? name.slice(1) : name, '1');
      return { what: deleting ? DELETED : ADDED, context: context(object), json: JSON.stringify(object) };
    }),
  );
}

test('deliver hands a batch over in order and stops at the first failure, giving its index', () => {
  const plugin = new Recorder();
  const { delivery } = bindPlugin({ manifest: () => plugin.manifest(), onAdd: (e) => plugin.onAdd(e), onDelete: (e) => plugin.onDelete(e) });
  assert.deepEqual(delivery.deliver(batch('a', '-b', 'c')), { tag: 'ok', val: undefined });
  assert.deepEqual(plugin.handled, ['add a', 'delete b', 'add c']);
  plugin.handled = [];
  assert.deepEqual(delivery.deliver(batch('a', 'bad', 'c', 'd')), {
    tag: 'err',
    val: { index: 1, message: 'refused shop/bad' },
  });
  assert.deepEqual(plugin.handled, ['add a', 'add bad'], 'nothing after the failure is handled');
  plugin.handled = [];
  assert.deepEqual(delivery.deliver(batch('bad')), { tag: 'err', val: { index: 0, message: 'refused shop/bad' } });
});

test('deliver awaits each async handler before the next, and a rejection fails at its index', async () => {
  testing.reset();
  const bound = bindPlugin(Recorder);
  const recorder = () => bound.delivery;
  const slow = recorder().deliver(batch('slow', 'a', 'slow', 'reject', 'z'));
  assert.ok(slow instanceof Promise, 'an async handler makes the answer a promise');
  assert.deepEqual(await slow, { tag: 'err', val: { index: 3, message: 'rejected' } });
  const sync = recorder().deliver(batch('a', '-a'));
  assert.deepEqual(sync, { tag: 'ok', val: undefined }, 'handlers returning nothing answer at once');
});

test('a malformed notification fails at its index after the ones before it are handled', () => {
  const plugin = new Recorder();
  const { delivery } = bindPlugin({ manifest: () => plugin.manifest(), onAdd: (e) => plugin.onAdd(e) });
  const frame = batch('a', 'b', 'c');
  const cut = frame.subarray(0, frame.length - 1);
  const answer = delivery.deliver(cut);
  assert.equal(answer.tag, 'err');
  assert.equal(answer.val.index, 2);
  assert.match(answer.val.message, /^malformed delivery frame: a field of \d+ bytes at byte \d+ runs past the frame's end/);
  assert.deepEqual(plugin.handled, ['add a', 'add b']);
  plugin.handled = [];
  const trailing = delivery.deliver(new Uint8Array([...frame, 9]));
  assert.deepEqual(trailing, { tag: 'err', val: { index: 3, message: 'malformed delivery frame: 1 bytes follow its last notification' } });
  assert.deepEqual(plugin.handled, ['add a', 'add b', 'add c']);
});

test('an event kept past its call still reads from its frame', () => {
  let kept;
  const { delivery } = bindPlugin({
    manifest: () => new Manifest('keeper', '1'),
    onAdd(event) {
      kept = event;
    },
  });
  const object = deployment('web', '1');
  assert.equal(delivery.deliver(batch('web')).tag, 'ok');
  assert.equal(kept.key, 'shop/web');
  assert.deepEqual(kept.object, object);
});

test('the options come from the plugin: Handler defaults, static properties, object properties', () => {
  assert.deepEqual(deliveryOptions(class extends Handler {}), { oldState: true, maxBatch: 1 });
  assert.deepEqual(deliveryOptions(Recorder), { oldState: true, maxBatch: 8 });
  class NewOnly extends Handler {
    static oldState = false;
  }
  assert.deepEqual(deliveryOptions(NewOnly), { oldState: false, maxBatch: 1 });
  assert.deepEqual(deliveryOptions({ manifest() {}, maxBatch: 4, oldState: false }), { oldState: false, maxBatch: 4 });
  assert.deepEqual(deliveryOptions({ manifest() {} }), { oldState: true, maxBatch: 1 });
  assert.deepEqual(bindPlugin(NewOnly).delivery.options(), { oldState: false, maxBatch: 1 });
  for (const maxBatch of [0, -1, 1.5, '2', 2 ** 32, Number.NaN]) {
    assert.throws(() => bindPlugin({ manifest() {}, maxBatch }), /the plugin's maxBatch must be a whole number from 1 to 4294967295/);
  }
  assert.deepEqual(deliveryOptions({ manifest() {}, maxBatch: 2 ** 32 - 1 }).maxBatch, 2 ** 32 - 1);
  assert.throws(() => bindPlugin({ manifest() {}, oldState: 'no' }), /the plugin's oldState must be true or false/);
});

test('the fake host delivers through frames, honouring oldState', async () => {
  testing.reset();
  const seen = [];
  class NewOnly extends Handler {
    static oldState = false;
    manifest() {
      return new Manifest('new-only', '1');
    }
    onUpdate(update) {
      seen.push(update.oldJson, update.new.metadata.resourceVersion);
      return update.old;
    }
  }
  const result = await testing.dispatch(NewOnly, testing.updated(deployment('web', '1'), deployment('web', '2')));
  assert.deepEqual(seen, ['', '2']);
  assert.deepEqual(result, { tag: 'err', val: "the old state was not delivered: the plugin's oldState is false" });
});
