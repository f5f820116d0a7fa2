// fetch as plugins get it: one hop at a time to the host (here the fake
// host's scripts), redirects followed by the SDK as the Fetch standard says.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as testing from '../src/testing.js';

const HOOK = 'https://hooks.example.com/alerts';

test('a POST is recorded and answered', async () => {
  testing.reset();
  testing.http.respond('https://hooks.example.com/', new Response('accepted', { status: 202, headers: { 'x-id': '7' } }));
  const response = await fetch(HOOK, {
    method: 'POST',
    body: JSON.stringify({ text: 'hi' }),
    headers: { 'content-type': 'application/json', authorization: 'Bearer t' },
  });
  assert.equal(response.status, 202);
  assert.equal(await response.text(), 'accepted');
  assert.equal(response.headers.get('x-id'), '7');
  const [post] = testing.http.takeRequests();
  assert.equal(post.method, 'POST');
  assert.equal(post.url, HOOK);
  assert.deepEqual(post.json(), { text: 'hi' });
  assert.equal(post.headers['content-type'], 'application/json');
  assert.equal(post.headers.authorization, 'Bearer t');
  assert.deepEqual(testing.http.requests(), []);
  // A persistent answer serves every request.
  assert.equal(await (await fetch(HOOK, { method: 'POST' })).text(), 'accepted');
});

test('unscripted requests get a 404, or are denied', async () => {
  testing.reset();
  assert.equal((await fetch('https://elsewhere.example.com/')).status, 404);
  testing.http.denyUnscripted();
  await assert.rejects(fetch('https://elsewhere.example.com/x'), (error) => {
    assert.equal(error.name, 'TypeError');
    assert.equal(error.message, 'NetworkError when attempting to fetch resource');
    assert.equal(error.cause.message, 'denied (scripted)');
    return true;
  });
});

test('one-shot answers come first, then the last persistent one that matches', async () => {
  testing.reset();
  testing.http.respond(HOOK, new Response('first'));
  testing.http.respond('https://hooks.example.com/*', new Response('glob'));
  testing.http.respondOnce(HOOK, new Response('down', { status: 503 }));
  testing.http.failOnce(HOOK, 'timeout');
  assert.equal((await fetch(HOOK)).status, 503);
  await assert.rejects(fetch(HOOK), /NetworkError/);
  assert.equal(await (await fetch(HOOK)).text(), 'glob');
  assert.throws(() => testing.http.fail(HOOK, 'sleepy'), /one of denied, timeout, connection, protocol/);
  assert.throws(() => testing.http.respond(HOOK, { status: 200 }), /takes a Response/);
});

test('redirects are followed as the Fetch standard says, each hop checked', async () => {
  testing.reset();
  testing.http.respondOnce(HOOK, new Response(null, { status: 303, headers: { location: '/seen' } }));
  testing.http.respondOnce('https://hooks.example.com/seen', new Response(null, { status: 307, headers: { location: 'https://other.example.com/final' } }));
  testing.http.respond('https://other.example.com/final', new Response('{"ok":true}'));
  const response = await fetch(HOOK, { method: 'POST', body: '{"a":1}', headers: { authorization: 't', 'content-type': 'application/json', 'x-trace': '1' } });
  assert.deepEqual(await response.json(), { ok: true });
  assert.equal(response.url, 'https://other.example.com/final');
  assert.equal(response.redirected, true);
  const [first, second, third] = testing.http.takeRequests();
  assert.deepEqual([first.method, second.method, third.method], ['POST', 'GET', 'GET']);
  assert.equal(second.body, undefined);
  assert.equal(second.headers['content-type'], undefined);
  assert.equal(second.headers.authorization, 't');
  assert.equal(third.headers.authorization, undefined, 'dropped across origins');
  assert.equal(third.headers['x-trace'], '1');

  testing.http.respond('https://a.example.com/', new Response(null, { status: 301, headers: { location: 'https://a.example.com/' } }));
  await assert.rejects(fetch('https://a.example.com/'), /more than 20 redirects/);
  assert.equal(testing.http.takeRequests().length, 21);
  assert.equal((await fetch('https://a.example.com/', { redirect: 'manual' })).status, 301);
  await assert.rejects(fetch('https://a.example.com/', { redirect: 'error' }), /redirect is 'error'/);

  testing.reset();
  testing.http.grant('https://hooks.example.com:443');
  testing.http.respond(HOOK, new Response(null, { status: 302, headers: { location: 'https://evil.example.com/' } }));
  await assert.rejects(fetch(HOOK), (error) => error.cause.message === 'denied (scripted)');
  assert.deepEqual(
    testing.http.takeRequests().map((request) => request.url),
    [HOOK, 'https://evil.example.com/'],
  );
});

test('a 307 repeats the method and the body', async () => {
  testing.reset();
  testing.http.respondOnce(HOOK, new Response(null, { status: 307, headers: { location: '/again' } }));
  testing.http.respond('https://hooks.example.com/again', new Response('ok'));
  await fetch(HOOK, { method: 'PUT', body: 'payload' });
  assert.deepEqual(
    testing.http.takeRequests().map((request) => [request.method, request.body]),
    [['PUT', 'payload'], ['PUT', 'payload']],
  );
});
