/**
 * `fetch` as plugins get it: the engine's `fetch` over
 * `wasi:http/outgoing-handler`, with redirects followed as the Fetch
 * standard says. StarlingMonkey's own `fetch` returns a redirect as the
 * response whatever `redirect` asks; this wrapper follows it (`'follow'`, the
 * default: at most 20; a 303, or a 301 or 302 after a POST, becomes a GET
 * without a body; `authorization` is dropped across origins), refuses it
 * (`'error'`), or returns it (`'manual'`). Each hop is a new request, which
 * the host checks against the origins granted to the plugin like the first.
 * `herald-build` installs it as `globalThis.fetch` in the component, and
 * `@herald/sdk/testing` over its scripted answers. Not a public API.
 *
 * @module
 * @internal
 */

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const BODY_HEADERS = ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location'];
/** The Fetch standard's redirect limit. */
export const MAX_REDIRECTS = 20;

/**
 * `fetch` over `send`, which makes one request (one hop) and never follows
 * a redirect itself.
 *
 * @param {(url: string, init: RequestInit) => Promise<Response>} send
 * @returns {(input: RequestInfo | URL, init?: RequestInit) => Promise<Response>}
 */
export function followRedirects(send) {
  return async function fetch(input, init) {
    const request = new Request(input, init);
    const mode = request.redirect;
    let method = request.method;
    const headers = new Headers(request.headers);
    let body = request.body === null ? undefined : await request.arrayBuffer();
    let url = request.url;
    for (let hops = 0; ; hops++) {
      const response = await send(url, { method, headers, body, redirect: 'manual' });
      const location = response.headers.get('location');
      if (!REDIRECTS.has(response.status) || location === null || mode === 'manual') {
        if (hops > 0) {
          Object.defineProperties(response, { url: { value: url }, redirected: { value: true } });
        }
        return response;
      }
      if (mode === 'error') {
        throw new TypeError(`${method} ${url}: redirected (${response.status}) and redirect is 'error'`);
      }
      if (hops === MAX_REDIRECTS) {
        throw new TypeError(`${method} ${url}: more than ${MAX_REDIRECTS} redirects`);
      }
      const next = new URL(location, url);
      if ((response.status === 303 && method !== 'HEAD') || ((response.status === 301 || response.status === 302) && method === 'POST')) {
        method = 'GET';
        body = undefined;
        for (const name of BODY_HEADERS) {
          headers.delete(name);
        }
      }
      if (next.origin !== new URL(url).origin) {
        headers.delete('authorization');
      }
      url = next.href;
    }
  };
}
