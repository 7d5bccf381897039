import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createKey, startTestApp, TestApp, ApiClient } from '../support/app';
import { forgetAccountPools } from '../../src/pools/lookup';
import { newId } from '../../src/ids';
import { addVerifiedDomain, counts, defaultAccountId, simpleSend } from './helpers';

let app: TestApp;
let live: ApiClient;
before(async () => {
  app = await startTestApp();
  await addVerifiedDomain(app, await defaultAccountId(app), 'example.com');
  live = app.api.withKey(await createKey(app, 'live', ['messages:send', 'messages:read', 'account:read']));
});
after(() => app.stop());

const usage = async () => (await live.get('/v1/account')).body.usage.billable_messages as number;

test('a live send needs a verified From domain; a subdomain of one does not count', async () => {
  for (const from of ['news@unverified.example', 'news@mail.example.com']) {
    const before = await counts(app);
    const res = await live.post('/v1/messages/send', simpleSend({ from }));
    assert.equal(res.status, 422, from);
    assert.equal(res.body.error.code, 'domain_not_verified');
    assert.equal(res.body.error.param, 'from');
    assert.deepEqual(await counts(app), before);
  }
  const ok = await live.post('/v1/messages/send', simpleSend({ from: 'News <news@EXAMPLE.com>' }));
  assert.equal(ok.status, 202, ok.text);
  const m = (await live.get(`/v1/messages/${ok.body.data[0].id}`)).body;
  assert.equal(m.domain_verified, true);
  assert.equal(m.sandbox, false);
  assert.equal(m.mode, 'live');
});

test('sandbox sends accept unverified domains and record that', async () => {
  const res = await app.api.post('/v1/messages/send', simpleSend({ from: 'x@unverified.example' }));
  assert.equal(res.status, 202);
  const row = await app.db('messages').where({ id: res.body.data[0].id }).first();
  assert.equal(Boolean(row.domain_verified), false);
  assert.equal(row.sending_domain, 'unverified.example');
});

test('live messages count toward usage, one per recipient; sandbox messages never do', async () => {
  const start = await usage();
  assert.equal((await live.post('/v1/messages/send', simpleSend({ to: ['a@example.org', 'b@example.org'], cc: ['c@example.org'], bcc: ['d@example.org'] }))).status, 202);
  assert.equal(await usage(), start + 4);
  assert.equal((await app.api.post('/v1/messages/send', simpleSend({ to: ['a@example.org', 'b@example.org'] }))).status, 202);
  assert.equal(await usage(), start + 4);
  const refused = await live.post('/v1/messages/send', simpleSend({ ip_pool: 'nope' }));
  assert.equal(refused.status, 422);
  assert.equal(await usage(), start + 4, 'a refused send is not billed');
});

test('ip_pool must name a pool of the account; default always exists', async () => {
  assert.equal((await live.post('/v1/messages/send', simpleSend({ ip_pool: 'default' }))).status, 202);
  const missing = await live.post('/v1/messages/send', simpleSend({ ip_pool: 'transactional' }));
  assert.equal(missing.status, 422);
  assert.equal(missing.body.error.param, 'ip_pool');
  // Pools are another module's: create one directly.
  await app.db('ip_pools').insert({ id: newId('pool'), account_id: await defaultAccountId(app), name: 'transactional', created_at: Date.now() });
  forgetAccountPools(app.db, await defaultAccountId(app)); // as the pools module does after its writes
  const ok = await live.post('/v1/messages/send', simpleSend({ ip_pool: 'transactional' }));
  assert.equal(ok.status, 202);
  assert.equal((await app.db('messages').where({ id: ok.body.data[0].id }).first()).ip_pool, 'transactional');
});
