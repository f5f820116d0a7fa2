import assert from 'node:assert/strict';
import { test } from 'node:test';
import { changes, decodedSize, keyCount, render } from '../src/diff.js';

test('changes are ordered added, changed, removed, each by key, data before binaryData', () => {
  const found = changes(
    { data: { b: '1', a: '1', gone: 'x' }, binaryData: { bin: 'AA==' } },
    { data: { b: '2', a: '2', z: 'new' }, binaryData: { bin: 'AAA=', added: 'AA==' } },
  );
  assert.deepEqual(
    found.map((change) => `${change.sign}${change.binary ? 'bin:' : ''}${change.key}`),
    ['+z', '+bin:added', '~a', '~b', '~bin:bin', '-gone'],
  );
});

test('missing data and binaryData count as empty', () => {
  assert.deepEqual(changes({}, {}), []);
  assert.equal(render(changes(undefined, { data: { a: '' } })), '+a=""');
  assert.equal(keyCount({}), 'keys=0');
});

test('base64 sizes account for padding and line breaks', () => {
  assert.equal(decodedSize(''), 0);
  assert.equal(decodedSize('AA=='), 1);
  assert.equal(decodedSize('AAA='), 2);
  assert.equal(decodedSize('AAAA'), 3);
  assert.equal(decodedSize('AAAA\nAAAA'), 6);
});
