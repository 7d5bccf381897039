/** Health, metrics, OpenAPI and docs, and logs without secrets. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { scrapeMetrics, startTestApp, TestApp } from '../support/app';
import { SPEC_ROUTES } from '../../src/http/spec-routes';

describe('operations endpoints', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app.stop());

  test('/healthz answers without a key when the database is reachable', async () => {
    const res = await app.api.withKey('').get('/healthz');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { status: 'ok' });
  });

  test('/metrics counts requests by route template and status', async () => {
    await app.api.get('/v1/account');
    await app.api.withKey('').get('/v1/account');
    const text = await scrapeMetrics(app);
    assert.match(text, /pigeon_http_requests_total\{method="GET",route="\/v1\/account",status="200"\} [1-9]/);
    assert.match(text, /pigeon_http_requests_total\{method="GET",route="\/v1\/account",status="401"\} [1-9]/);
    assert.match(text, /pigeon_process_resident_memory_bytes/);
  });

  test('/metrics labels a 405 on an arbitrary path without the path, so callers cannot add series', async () => {
    assert.equal((await app.api.withKey('').patch('/v1/messages/msg_made_up_1234', {})).status, 405);
    await app.api.withKey('').get('/healthz');
    const text = await scrapeMetrics(app);
    assert.doesNotMatch(text, /msg_made_up_1234/);
    assert.match(text, /pigeon_http_requests_total\{method="PATCH",route="unmatched",status="405"\} [1-9]/);
    assert.match(text, /pigeon_http_requests_total\{method="GET",route="\/healthz",status="200"\} [1-9]/);
  });

  test('anyone who can reach the API port cannot read /metrics there: 404, served only on the metrics listener', async () => {
    const res = await app.api.withKey('').get('/metrics');
    assert.equal(res.status, 404);
    assert.equal(res.body.error.code, 'route_not_found');
    assert.notEqual(new URL(app.metrics!.url).port, String(app.http.port));
    assert.match(await scrapeMetrics(app), /pigeon_http_requests_total/);
  });

  test('with metrics.token set, a scrape without the bearer token (or with a wrong one) gets 401', async () => {
    const own = await startTestApp({ metrics: { token: 's3cret-scrape-token' } });
    try {
      const url = own.metrics!.url;
      assert.equal((await fetch(url)).status, 401);
      assert.equal((await fetch(url, { headers: { authorization: 'Bearer wrong' } })).status, 401);
      assert.match(await scrapeMetrics(own, 's3cret-scrape-token'), /pigeon_process_resident_memory_bytes/);
      assert.equal((await fetch(new URL('/v1/account', url))).status, 404, 'the metrics listener serves nothing else');
    } finally {
      await own.stop();
    }
  });

  test('metrics.enabled false opens no metrics listener', async () => {
    const own = await startTestApp({ metrics: { enabled: false } });
    try {
      assert.equal(own.metrics, undefined);
      assert.equal(own.listeners.metrics, undefined);
    } finally {
      await own.stop();
    }
  });

  test('/v1/openapi.json is OpenAPI 3.1 listing every SPEC path with its scope', async () => {
    const doc = (await app.api.withKey('').get('/v1/openapi.json')).body;
    assert.equal(doc.openapi, '3.1.0');
    assert.ok(doc.components.securitySchemes.bearerAuth);
    assert.ok(doc.components.schemas.Error);
    for (const r of SPEC_ROUTES) {
      const op = doc.paths[r.path]?.[r.method];
      assert.ok(op, `${r.method} ${r.path} missing`);
      assert.equal(op['x-required-scope'], r.scope, `${r.method} ${r.path}`);
    }
    for (const type of ['message.queued', 'message.sent', 'message.delivered', 'message.bounced', 'message.complained', 'message.opened', 'message.clicked']) {
      assert.ok(doc.webhooks[type], type);
    }
    const delivered = doc.webhooks['message.delivered'].post.requestBody.content['application/json'].schema;
    assert.deepEqual(delivered.properties.data.required.slice(0, 4), ['message_id', 'to', 'from', 'delivered_at']);
  });

  test('/docs renders from the local OpenAPI document with no external resources', async () => {
    const res = await app.api.withKey('').get('/docs');
    assert.equal(res.status, 200);
    assert.match(res.text, /\/v1\/openapi\.json/);
    assert.doesNotMatch(res.text, /<script[^>]+src=|<link[^>]+href=|https?:\/\/(?!127)/);
  });

  test('logs carry the request id and never the API key', async () => {
    const res = await app.api.get('/v1/account');
    const id = res.headers.get('x-request-id') as string;
    const line = app.logs.find((l) => l.includes(id));
    assert.ok(line, 'the request is logged with its id');
    assert.ok(!app.logs.some((l) => l.includes(app.key)), 'the key must not appear in any log line');
  });

  test('/metrics still answers, with the queue depth, after the delivery worker has stopped', async () => {
    const own = await startTestApp();
    try {
      await own.workers.find((w) => w.name === 'delivery')?.stop();
      assert.match(await scrapeMetrics(own), /pigeon_queue_messages\{status="queued"\} 0/);
    } finally {
      await own.stop();
    }
  });
});
