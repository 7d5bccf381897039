// The read side: lookups on every request come from caches loaded through the read-only reader, never the
// writer, and every change through this process applies to the very next request.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Knex } from 'knex';
import { createKey, liveApi, startTestApp, type TestApp } from '../support/app';
import { addVerifiedDomain, defaultAccountId, pauseDelivery } from '../messages/helpers';
import { keyCacheSize } from '../../src/auth/keys';

const send = (from = 'app@shop.test', over: Record<string, unknown> = {}) => ({ from, to: ['rcpt@example.org'], subject: 'hi', text: 'hello', ...over });

/** The SQL each handle runs while `work` does, by the table the lookups read. */
async function statements(handle: Knex, work: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  const listen = (q: { sql: string }) => seen.push(q.sql);
  handle.on('query', listen);
  try {
    await work();
  } finally {
    handle.off('query', listen);
  }
  return seen;
}
const LOOKUP = /from [`"](api_keys|accounts|account_settings|domains|ip_pools)[`"]/i;

describe('lookups off the writer', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp({ ips: [{ address: '127.0.0.2', hostname: 'out.pigeon.test' }] });
    await pauseDelivery(app);
    await addVerifiedDomain(app, await defaultAccountId(app), 'shop.test');
  });
  after(() => app?.stop());

  it('50 live sends with one key from a verified domain run no key, account, allowlist or domain lookup on the writer', async () => {
    const live = await liveApi(app, ['messages:send']);
    const onReader: string[] = [];
    const onWriter = await statements(app.db, async () => {
      onReader.push(...(await statements(app.deps.reader, async () => {
        for (let i = 0; i < 50; i++) assert.equal((await live.post('/v1/messages/send', send())).status, 202);
      })));
    });
    assert.deepEqual(onWriter.filter((sql) => LOOKUP.test(sql)), [], 'no lookup on the writer');
    // one load of each (key, account, allowlist, domains) unless a 2 s TTL ran out meanwhile; before: 150 on the writer
    const lookups = onReader.filter((sql) => LOOKUP.test(sql));
    assert.ok(lookups.length >= 4 && lookups.length <= 12, `${lookups.length} lookups on the reader`);
  });

  it('the reader refuses writes (query_only), so a read path cannot write by mistake', async () => {
    await assert.rejects(app.deps.reader('accounts').insert({ id: 'acc_x', name: 'x', created_at: 0 }), /SQLITE_READONLY|readonly/i);
  });

  it('a GET right after the same client\'s send sees the message (the reader sees every committed write)', async () => {
    const accepted = await app.api.post('/v1/messages/send', send());
    assert.equal(accepted.status, 202);
    const id = accepted.body.data?.[0]?.id ?? accepted.body.messages?.[0]?.id ?? accepted.body.id;
    assert.ok(id, accepted.text);
    assert.equal((await app.api.get(`/v1/messages/${id}`)).status, 200);
  });
});

describe('invalidation: every change applies to the next request', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp({ ips: [{ address: '127.0.0.2', hostname: 'out.pigeon.test' }] });
    await pauseDelivery(app);
  });
  after(() => app?.stop());

  it('a key revoked through the API is refused on the next request, with the key cached', async () => {
    const manager = await liveApi(app, ['account:manage']);
    const doomed = await createKey(app, 'test', ['messages:read']);
    const client = app.api.withKey(doomed);
    assert.equal((await client.get('/v1/messages')).status, 200); // now cached
    const listed = await manager.get('/v1/api-keys');
    const id = listed.body.data.find((k: { prefix: string }) => doomed.startsWith(k.prefix)).id;
    assert.equal((await manager.delete(`/v1/api-keys/${id}`)).status, 200);
    const refused = await client.get('/v1/messages');
    assert.equal(refused.status, 401);
    assert.equal(refused.body.error.code, 'revoked_api_key');
  });

  it('an allowlist change applies to the next request of a cached key', async () => {
    const live = await liveApi(app, ['account:manage', 'account:read']);
    assert.equal((await live.get('/v1/account')).status, 200);
    assert.equal((await live.put('/v1/settings/security', { allowed_ips: ['203.0.113.0/24'] })).status, 200);
    const refused = await live.get('/v1/account');
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error.code, 'ip_not_allowed');
    await app.deps.settings.setAllowedIps(await defaultAccountId(app), []); // as `pigeon settings reset-allowlist`
    assert.equal((await live.get('/v1/account')).status, 200);
  });

  it('a deleted domain refuses the next live send from it, with the domain cached as verified', async () => {
    await addVerifiedDomain(app, await defaultAccountId(app), 'gone.test');
    const live = await liveApi(app, ['messages:send', 'domains:manage']);
    assert.equal((await live.post('/v1/messages/send', send('app@gone.test'))).status, 202);
    assert.equal((await live.delete('/v1/domains/gone.test')).status, 200);
    const refused = await live.post('/v1/messages/send', send('app@gone.test'));
    assert.equal(refused.status, 422);
    assert.equal(refused.body.error.code, 'domain_not_verified');
  });

  it('a pool created, renamed or deleted applies to the next send naming it', async () => {
    const live = await liveApi(app, ['ip-pools:manage']);
    assert.equal((await app.api.post('/v1/messages/send', send('a@b.test', { ip_pool: 'bulk' }))).body.error?.code, 'unknown_ip_pool');
    assert.equal((await live.post('/v1/ip-pools', { name: 'bulk', ips: ['127.0.0.2'] })).status, 201);
    assert.equal((await app.api.post('/v1/messages/send', send('a@b.test', { ip_pool: 'bulk' }))).status, 202);
    await app.db('messages').where({ ip_pool: 'bulk' }).update({ status: 'cancelled', next_attempt_at: null }); // let the pool go
    assert.equal((await live.patch('/v1/ip-pools/bulk', { name: 'mass' })).status, 200);
    assert.equal((await app.api.post('/v1/messages/send', send('a@b.test', { ip_pool: 'bulk' }))).body.error?.code, 'unknown_ip_pool');
    assert.equal((await app.api.post('/v1/messages/send', send('a@b.test', { ip_pool: 'mass' }))).status, 202);
    await app.db('messages').where({ ip_pool: 'mass' }).update({ status: 'cancelled', next_attempt_at: null });
    assert.equal((await live.delete('/v1/ip-pools/mass')).status, 200);
    assert.equal((await app.api.post('/v1/messages/send', send('a@b.test', { ip_pool: 'mass' }))).body.error?.code, 'unknown_ip_pool');
  });

  it('a flood of 3,000 made-up API keys caches none of them, and a key created afterwards works at once', async () => {
    const sizeBefore = keyCacheSize(app.db);
    for (let i = 0; i < 3_000; i += 100) {
      const batch = Array.from({ length: 100 }, (_, j) => `svc_test_${String(i + j).padStart(40, 'x')}`);
      // the failure throttle answers 429 once it trips; either way nothing is cached
      await Promise.all(batch.map(async (k) => assert.ok([401, 429].includes((await app.api.withKey(k).get('/v1/messages')).status))));
    }
    assert.equal(keyCacheSize(app.db), sizeBefore);
    const fresh = await createKey(app, 'test', ['messages:read']);
    assert.equal((await app.api.withKey(fresh).get('/v1/messages')).status, 200);
  });
});
