// ApiRouter dispatches a request to the routes of its first two path segments (src/http/api.ts). Two Koa apps
// on loopback, one dispatching through the whole @koa/router and one through the groups, must answer every
// request alike: the same route's handler (also where a route with a parameter among its first two segments is
// registered before, after or between a group's routes), the same 404, and the same 405 with the same Allow.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { ApiRouter, type Method } from '../../src/http/api';

function routes(): ApiRouter {
  const api = new ApiRouter(async () => {
    throw new Error('no route here needs a key');
  }, 1024);
  const add = (method: Method, path: string) =>
    api.add({ method, path, scope: null, tag: 't', summary: path, responses: {}, handler: () => ({ status: 200, body: { route: `${method} ${path}` } }) });
  add('get', '/v1/{thing}'); // a parameter in the second segment, before the groups exist
  add('get', '/v1/account');
  add('post', '/v1/messages/send');
  add('get', '/v1/messages/{id}');
  add('delete', '/v1/messages/{id}');
  add('get', '/u/{token}/page'); // a parameter in the second segment, after some groups exist
  add('put', '/v1/{kind}/special'); // one that matches paths of groups made before it
  add('post', '/v1/messages/{id}/cancel');
  add('get', '/t/o');
  add('put', '/v1/{a}/{b}'); // a later loose route that also matches what /v1/{kind}/special does: order decides
  return api;
}

async function serve(dispatch: (api: ApiRouter) => Koa.Middleware): Promise<{ url: string; server: http.Server }> {
  const api = routes();
  const app = new Koa();
  app.use(dispatch(api));
  app.use(api.router.allowedMethods());
  const server = http.createServer(app.callback()).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('routes found by path prefix', () => {
  let whole: { url: string; server: http.Server };
  let grouped: { url: string; server: http.Server };
  before(async () => {
    whole = await serve((api) => api.router.routes() as unknown as Koa.Middleware);
    grouped = await serve((api) => api.routesMiddleware() as unknown as Koa.Middleware);
  });
  after(() => {
    whole.server.close();
    grouped.server.close();
  });

  it('answer every request as the whole router does', async () => {
    const paths = [
      '/v1/account', '/V1/ACCOUNT', '/v1/account/', '/v1/anything', '/v1/messages', '/v1/messages/', '/v1/messages/send',
      '/v1/messages/msg_1', '/V1/Messages/MSG_1/', '/v1/messages/msg_1/cancel', '/v1/messages/msg_1/cancel/more',
      '/v1/messages.json', '/v1//messages/send', '/v1/messages%2Fsend', '/u/tok/page', '/U/tok/PAGE/', '/u/tok',
      '/v1/messages/special', '/v1/account/special', '/t/o', '/t/o/', '/t', '/v1', '/v1/', '/', '/nothing/here',
      '/v1/other/special', '/V1/Other/Special/', '/postmark/email', '/u/tok/page/more',
    ];
    let routed = 0;
    for (const path of paths) {
      for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
        const [a, b] = await Promise.all([whole, grouped].map(async (s) => {
          const res = await fetch(s.url + path, { method });
          return { status: res.status, allow: res.headers.get('allow'), body: await res.text() };
        }));
        assert.deepEqual(b, a, `${method} ${path}`);
        if (a.status === 200) routed++;
      }
    }
    // the comparison covered routed requests, the parameter routes among them, not only 404s and 405s
    assert.ok(routed >= 20, `${routed} requests reached a route`);
    const thing = await fetch(`${grouped.url}/v1/account`).then((r) => r.json());
    assert.deepEqual(thing, { route: 'get /v1/{thing}' }); // registered first, so it answers, as in the whole router
    const special = await fetch(`${grouped.url}/v1/messages/special`, { method: 'PUT' }).then((r) => r.json());
    assert.deepEqual(special, { route: 'put /v1/{kind}/special' });
    // a path of no group reaches the loose routes
    const other = await fetch(`${grouped.url}/v1/other/special`, { method: 'PUT' }).then((r) => r.json());
    assert.deepEqual(other, { route: 'put /v1/{kind}/special' });
  });

  it('refuses middleware meant to run before a route that is already there', () => {
    const api = routes();
    assert.throws(() => api.before('post', '/v1/messages/send', async (_ctx, next) => next()), /before the route/);
  });
});
