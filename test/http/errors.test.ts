/** Every error status of the HTTP surface comes back in the one error shape, with no internals. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiClient, liveApi, startTestApp, TestApp } from '../support/app';

function assertErrorShape(res: { status: number; body: any; headers: Headers }, status: number, code: string) {
  assert.equal(res.status, status);
  assert.equal(typeof res.body, 'object', 'body must be JSON');
  assert.deepEqual(Object.keys(res.body), ['error']);
  assert.equal(res.body.error.code, code);
  assert.equal(typeof res.body.error.type, 'string');
  assert.equal(typeof res.body.error.message, 'string');
  assert.equal(res.body.error.request_id, res.headers.get('x-request-id'));
  assert.doesNotMatch(JSON.stringify(res.body), /at .*\.js:\d+|node_modules|SQLITE|\/dist\//);
}

describe('error statuses', () => {
  let app: TestApp;
  let live: ApiClient; // /v1/api-keys needs a live key
  before(async () => {
    app = await startTestApp({ http: { jsonLimitBytes: 2048 } });
    live = await liveApi(app);
  });
  after(() => app.stop());

  test('unknown route → 404 route_not_found', async () => {
    assertErrorShape(await app.api.get('/v1/nothing-here'), 404, 'route_not_found');
    assertErrorShape(await app.api.get('/favicon.ico'), 404, 'route_not_found');
  });

  test('wrong method → 405 method_not_allowed with Allow', async () => {
    const res = await app.api.patch('/v1/account', {});
    assertErrorShape(res, 405, 'method_not_allowed');
    assert.match(res.headers.get('allow') ?? '', /GET/);
  });

  test('routes are found by path prefix as by the whole router: case, trailing slash, 404, 405, parameter routes', async () => {
    const account = await app.api.get('/v1/account');
    assert.equal(account.status, 200);
    assert.deepEqual((await app.api.get('/V1/Account')).body, account.body);
    assert.deepEqual((await app.api.get('/v1/account/')).body, account.body);
    const wrongMethod = await app.api.patch('/v1/messages/send', {});
    assertErrorShape(wrongMethod, 405, 'method_not_allowed');
    // both routes whose path matches: POST /v1/messages/send and GET /v1/messages/{id}
    assert.match(wrongMethod.headers.get('allow') ?? '', /POST/);
    assert.match(wrongMethod.headers.get('allow') ?? '', /GET/);
    assertErrorShape(await app.api.get('/v1/messages/msg_made_up_1234/deeper/still'), 404, 'route_not_found');
    assertErrorShape(await app.api.get('/v1'), 404, 'route_not_found');
    assertErrorShape(await app.api.get('/v1/'), 404, 'route_not_found');
    // a route with a parameter among its first two segments: reached, and its methods told
    assertErrorShape(await app.api.get('/u/not-a-token'), 404, 'not_found');
    const allow = (await app.api.put('/u/not-a-token', {})).headers.get('allow') ?? '';
    assert.deepEqual(allow.split(', ').sort(), ['GET', 'HEAD', 'POST']);
  });

  test('malformed JSON → 400 malformed_body', async () => {
    assertErrorShape(await live.post('/v1/api-keys', '{"name": '), 400, 'malformed_body');
    assertErrorShape(await live.post('/v1/api-keys', '"a string"'), 400, 'malformed_body');
  });

  test('wrong content type → 415', async () => {
    const res = await live.post('/v1/api-keys', 'name=x', { 'content-type': 'application/x-www-form-urlencoded' });
    assertErrorShape(res, 415, 'unsupported_media_type');
  });

  test('a body over the JSON limit → 413 and nothing created', async () => {
    const before = await app.db('api_keys').count({ n: '*' }).first();
    const res = await live.post('/v1/api-keys', { name: 'x'.repeat(5000), mode: 'test', scopes: ['account:read'] });
    assertErrorShape(res, 413, 'payload_too_large');
    assert.deepEqual(await app.db('api_keys').count({ n: '*' }).first(), before);
  });

  test('unknown fields → 422 naming them', async () => {
    const res = await live.post('/v1/api-keys', { name: 'x', mode: 'test', scopes: ['account:read'], admin: true });
    assertErrorShape(res, 422, 'validation_failed');
    assert.equal(res.body.error.param, 'admin');
  });

  test('bad query parameters → 400 naming the parameter', async () => {
    for (const q of ['limit=0', 'limit=101', 'limit=abc', 'cursor=%27%3B%20drop']) {
      const res = await live.get(`/v1/api-keys?${q}`);
      assertErrorShape(res, 400, 'invalid_parameter');
      assert.equal(res.body.error.param, q.split('=')[0]);
    }
  });

  test('an internal failure → 500 with a generic message; details only in the log', async () => {
    await app.db.raw('DROP TABLE usage_counters');
    const res = await app.api.get('/v1/account');
    assertErrorShape(res, 500, 'internal_error');
    assert.ok(app.logs.some((l) => l.includes('request failed') && l.includes('usage_counters')));
  });

  test('an incoming X-Request-Id is echoed when it is sane, replaced when not', async () => {
    assert.equal((await app.api.get('/healthz', { 'x-request-id': 'abc-123' })).headers.get('x-request-id'), 'abc-123');
    const replaced = (await app.api.get('/healthz', { 'x-request-id': 'bad id\t<>' })).headers.get('x-request-id');
    assert.match(replaced ?? '', /^req_/);
  });
});

describe('rate limiting per key', () => {
  test('every authenticated response carries RateLimit headers; past the burst → 429 with Retry-After', async () => {
    const app = await startTestApp({ rateLimit: { requestsPerSecond: 1, burst: 3 } });
    try {
      const first = await app.api.get('/v1/account');
      assert.equal(first.status, 200);
      assert.equal(first.headers.get('ratelimit-policy'), '"per-key";q=3;w=3');
      assert.match(first.headers.get('ratelimit') ?? '', /^"per-key";r=2;t=\d+$/);
      await app.api.get('/v1/account');
      await app.api.get('/v1/account');
      const limited = await app.api.get('/v1/account');
      assertErrorShape(limited, 429, 'rate_limited');
      assert.equal(limited.headers.get('retry-after'), '1');
      assert.match(limited.headers.get('ratelimit') ?? '', /r=0/);
    } finally {
      await app.stop();
    }
  });
});
