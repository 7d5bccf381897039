import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../src/clock';
import { createKey, startTestApp, TestApp } from '../support/app';
import { requestHash } from '../../src/messages/idempotency';
import { counts, defaultAccountId, simpleSend, pauseDelivery } from './helpers';

const clock = new FakeClock(Date.UTC(2026, 0, 5, 9, 0, 0));
let app: TestApp;
before(async () => {
  app = await startTestApp({}, { clock });
  await pauseDelivery(app);
});
after(() => app.stop());

const withKey = (key: string) => ({ 'idempotency-key': key });

test('the same key and body return the first response again and store nothing new', async () => {
  const body = simpleSend({ to: ['a@example.org', 'b@example.org'], tags: ['x'] });
  const first = await app.api.post('/v1/messages/send', body, withKey('order-1001'));
  assert.equal(first.status, 202);
  assert.equal(first.headers.get('idempotent-replayed'), null);
  const stored = await counts(app);
  // Same content, keys in another order: still the same request.
  const reordered = Object.fromEntries(Object.entries(body).reverse());
  const second = await app.api.post('/v1/messages/send', reordered, withKey('order-1001'));
  assert.equal(second.status, 202);
  assert.deepEqual(second.body, first.body);
  assert.equal(second.headers.get('idempotent-replayed'), 'true');
  assert.deepEqual(await counts(app), stored);
});

test('the same key with another body is a 422 and stores nothing', async () => {
  assert.equal((await app.api.post('/v1/messages/send', simpleSend(), withKey('order-2002'))).status, 202);
  const stored = await counts(app);
  const res = await app.api.post('/v1/messages/send', simpleSend({ subject: 'Different' }), withKey('order-2002'));
  assert.equal(res.status, 422);
  assert.equal(res.body.error.code, 'idempotency_key_reused');
  assert.deepEqual(await counts(app), stored);
});

test('a request while another with the same key is in flight gets 409', async () => {
  // A pending record is what an in-flight request leaves: make one that stays.
  const hash = requestHash(simpleSend());
  await app.db('idempotency_keys').insert({ account_id: await defaultAccountId(app), mode: 'test', key: 'inflight-1', request_hash: hash, state: 'pending', created_at: clock.now() });
  const before = await counts(app);
  const blocked = await app.api.post('/v1/messages/send', simpleSend(), withKey('inflight-1'));
  assert.equal(blocked.status, 409);
  assert.equal(blocked.body.error.code, 'idempotency_conflict');
  const otherBody = await app.api.post('/v1/messages/send', simpleSend({ subject: 'changed' }), withKey('inflight-1'));
  assert.equal(otherBody.status, 422, 'a different body is refused as such even while the first is in flight');
  assert.deepEqual(await counts(app), before);
  // A pending record left by a process that died is given up after a while.
  clock.advance(11 * 60_000);
  assert.equal((await app.api.post('/v1/messages/send', simpleSend(), withKey('inflight-1'))).status, 202);
});

test('concurrent requests with one key create the messages once; the others get 409 or the same answer', async () => {
  const before = await counts(app);
  const body = simpleSend({ to: ['c1@example.org', 'c2@example.org', 'c3@example.org'] });
  const answers = await Promise.all(Array.from({ length: 8 }, () => app.api.post('/v1/messages/send', body, withKey('burst-1'))));
  const fresh = answers.filter((a) => a.status === 202 && a.headers.get('idempotent-replayed') === null);
  assert.equal(fresh.length, 1, answers.map((a) => a.status).join(','));
  for (const a of answers) {
    if (a.status === 202) assert.deepEqual(a.body, fresh[0].body);
    else assert.equal(a.status, 409);
  }
  const after = await counts(app);
  assert.equal(after.messages - before.messages, 3);
});

test('a request that fails after claiming its key releases it', async () => {
  const bad = await app.api.post('/v1/messages/send', simpleSend({ ip_pool: 'missing' }), withKey('retry-1'));
  assert.equal(bad.status, 422);
  assert.equal(await app.db('idempotency_keys').where({ key: 'retry-1' }).first(), undefined);
  const good = await app.api.post('/v1/messages/send', simpleSend(), withKey('retry-1'));
  assert.equal(good.status, 202);
});

test('after 24 hours a key is free again', async () => {
  const first = await app.api.post('/v1/messages/send', simpleSend(), withKey('daily'));
  clock.advance(24 * 3600_000 + 1);
  const second = await app.api.post('/v1/messages/send', simpleSend({ subject: 'another day' }), withKey('daily'));
  assert.equal(second.status, 202);
  assert.notDeepEqual(second.body, first.body);
});

test('keys are separate per mode', async () => {
  const live = app.api.withKey(await createKey(app, 'live', ['messages:send']));
  assert.equal((await app.api.post('/v1/messages/send', simpleSend(), withKey('shared'))).status, 202);
  // Same key, live mode: a new request there (it fails for the unverified domain, not for the key).
  const res = await live.post('/v1/messages/send', simpleSend({ subject: 'x' }), withKey('shared'));
  assert.equal(res.body.error.code, 'domain_not_verified');
});

test('a malformed Idempotency-Key is a 400', async () => {
  const res = await app.api.post('/v1/messages/send', simpleSend(), withKey('x'.repeat(300)));
  assert.equal(res.status, 400);
  assert.equal(res.body.error.param, 'Idempotency-Key');
});
