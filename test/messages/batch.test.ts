// POST /v1/messages/batch: per-item answers, one commit for the accepted items, idempotency, bounds and OpenAPI.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../src/clock';
import { createKey, startTestApp, TestApp } from '../support/app';
import { counts, pauseDelivery, simpleSend } from './helpers';

const clock = new FakeClock(Date.UTC(2026, 0, 5, 9, 0, 0));
let app: TestApp;
before(async () => {
  app = await startTestApp({}, { clock });
  await pauseDelivery(app);
});
after(() => app.stop());

test('each item is answered on its own; the valid ones are stored, the invalid ones name their fault', async () => {
  const before = await counts(app);
  const res = await app.api.post('/v1/messages/batch', {
    messages: [
      simpleSend({ to: ['a@example.org', 'b@example.org'], tags: ['batch'] }),
      simpleSend({ to: ['not an address'] }),
      simpleSend({ subject: undefined, text: undefined, template_id: 'tpl_missing' }),
      { from: 'x@example.com', to: ['c@example.org'], subject: 's', text: 't', bogus: 1 },
      simpleSend({ to: ['d@example.org'] }),
    ],
  });
  assert.equal(res.status, 200, res.text);
  const data = res.body.data;
  assert.equal(data.length, 5);
  assert.equal(data[0].status, 'accepted');
  assert.deepEqual(data[0].messages.map((m: { to: string }) => m.to), ['a@example.org', 'b@example.org']);
  assert.match(data[0].batch_id, /^bat_/);
  assert.equal(data[1].status, 'failed');
  assert.equal(data[1].error.status, 422);
  assert.equal(data[1].error.param, 'to[0]');
  assert.equal(data[2].error.code, 'template_not_found');
  assert.equal(data[3].error.code, 'validation_failed');
  assert.equal(data[3].error.param, 'bogus');
  assert.equal(data[4].status, 'accepted');
  const after = await counts(app);
  assert.equal(after.messages - before.messages, 3);
  const rows = await app.db('messages').whereIn('id', [data[0].messages[0].id, data[4].messages[0].id]).select('batch_id', 'tags');
  assert.equal(new Set(rows.map((r: { batch_id: string }) => r.batch_id)).size, 2, 'each item is its own send');
});

test('an Idempotency-Key replays the batch answer and stores nothing new; a batch that stored nothing releases the key', async () => {
  const body = { messages: [simpleSend({ to: ['e@example.org'] }), simpleSend({ to: ['bad'] })] };
  const first = await app.api.post('/v1/messages/batch', body, { 'idempotency-key': 'batch-1' });
  assert.equal(first.status, 200);
  const stored = await counts(app);
  const again = await app.api.post('/v1/messages/batch', body, { 'idempotency-key': 'batch-1' });
  assert.equal(again.headers.get('idempotent-replayed'), 'true');
  assert.deepEqual(again.body, first.body);
  assert.deepEqual(await counts(app), stored);
  // The same key and the same body on the single-send endpoint is not this request.
  const single = await app.api.post('/v1/messages/send', body.messages[0], { 'idempotency-key': 'batch-1' });
  assert.equal(single.status, 422);
  assert.equal(single.body.error.code, 'idempotency_key_reused');

  const allBad = { messages: [simpleSend({ to: ['bad'] })] };
  const failed = await app.api.post('/v1/messages/batch', allBad, { 'idempotency-key': 'batch-2' });
  assert.equal(failed.body.data[0].status, 'failed');
  const fixed = await app.api.post('/v1/messages/batch', { messages: [simpleSend()] }, { 'idempotency-key': 'batch-2' });
  assert.equal(fixed.body.data[0].status, 'accepted', 'the key was released');
});

test('a batch of more than 500 items, or none, is refused whole with the error shape', async () => {
  const stored = await counts(app);
  const tooMany = await app.api.post('/v1/messages/batch', { messages: Array.from({ length: 501 }, () => simpleSend()) });
  assert.equal(tooMany.status, 422);
  assert.equal(tooMany.body.error.param, 'messages');
  const none = await app.api.post('/v1/messages/batch', { messages: [] });
  assert.equal(none.status, 422);
  const notObjects = await app.api.post('/v1/messages/batch', { messages: ['x'] });
  assert.equal(notObjects.status, 422);
  assert.deepEqual(await counts(app), stored);
});

test('a key without messages:send is refused with 403 insufficient_scope', async () => {
  const readOnly = app.api.withKey(await createKey(app, 'test', ['messages:read']));
  const res = await readOnly.post('/v1/messages/batch', { messages: [simpleSend()] });
  assert.equal(res.status, 403);
  assert.equal(res.body.error.code, 'insufficient_scope');
});

test('OpenAPI documents the batch endpoint with the send body as its item schema', async () => {
  const doc = (await app.api.get('/v1/openapi.json')).body;
  const op = doc.paths['/v1/messages/batch'].post;
  assert.equal(op['x-pigeon-extension'], true);
  const items = op.requestBody.content['application/json'].schema.properties.messages.items;
  assert.ok(items.properties.from && items.properties.attachments, 'item schema is the send body');
  assert.equal(items.additionalProperties, false);
  assert.ok(op.responses['200'].content['application/json'].schema);
  assert.ok(!Object.keys(doc.paths).some((p) => /postmark|resend|sendgrid/.test(p)), 'compatibility layers stay out of /v1 OpenAPI');
});

test('a batch of 550 copies (11 items × 50 recipients) is stored whole: inserts are split under SQLite\'s 500-term limit', async () => {
  const before = await counts(app);
  const items = Array.from({ length: 11 }, (_, i) => simpleSend({ to: Array.from({ length: 50 }, (_, j) => `r${i}-${j}@example.org`) }));
  const res = await app.api.post('/v1/messages/batch', { messages: items });
  assert.equal(res.status, 200, res.text);
  assert.ok(res.body.data.every((d: { status: string }) => d.status === 'accepted'));
  assert.equal((await counts(app)).messages - before.messages, 550);
});

test('a batch past 2,000 recipient copies in all: the item that passes the bound fails with batch_too_large, the rest are stored', async () => {
  const before = await counts(app);
  const items = Array.from({ length: 41 }, (_, i) => simpleSend({ to: Array.from({ length: 50 }, (_, j) => `s${i}-${j}@example.org`) }));
  const res = await app.api.post('/v1/messages/batch', { messages: items });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.data.filter((d: { status: string }) => d.status === 'accepted').length, 40);
  assert.equal(res.body.data[40].error.code, 'batch_too_large');
  assert.equal((await counts(app)).messages - before.messages, 2000);
});
