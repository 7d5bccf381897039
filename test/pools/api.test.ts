// The IP pools API: create, list (with the default pool), show, change, delete; validation and scopes.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../src/clock';
import { createKey as makeKey } from '../../src/auth/keys';
import { createKey, startTestApp, type ApiClient, type TestApp } from '../support/app';
import { insertQueued, ipOf, IPS, liveClient, type PoolBody } from './helpers';

describe('IP pools API', () => {
  let app: TestApp;
  /** pool writes need a live key; the app's own client has the sandbox key */
  let api: ApiClient;
  let accountId: string;
  const clock = new FakeClock(Date.UTC(2026, 2, 2, 10, 30));

  before(async () => {
    app = await startTestApp({ ips: [...IPS, { address: '2001:db8::10', hostname: 'out6.pigeon.test', weight: 3 }] }, { clock });
    accountId = (await app.db('accounts').first('id')).id;
    api = await liveClient(app);
  });
  after(() => app.stop());

  it('the default pool exists from the start with every configured IP, warm, in the page shape', async () => {
    const fresh = await startTestApp({ ips: IPS });
    try {
      const res = await fresh.api.get('/v1/ip-pools');
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.pagination, { has_more: false, next_cursor: null, total: 1 });
      const [pool] = res.body.data as PoolBody[];
      assert.deepEqual([pool.id, pool.name, pool.default, pool.overflow], ['pool_default', 'default', true, 'queue']);
      assert.deepEqual(pool.ips.map((i) => [i.address, i.hostname, i.family, i.configured]), [
        ['127.0.0.2', 'out2.pigeon.test', 'ipv4', true],
        ['127.0.0.3', 'out3.pigeon.test', 'ipv4', true],
      ]);
      assert.equal(pool.ips[0].warmup.status, 'warm');
      assert.equal(pool.ips[0].warmup.today_cap, null);
      assert.deepEqual(pool.ips[0].usage_today.total, 0);
      assert.deepEqual(pool.ips[0].throttles, []);
    } finally {
      await fresh.stop();
    }
  });

  it('creating a pool returns 201 with its IPs in config spelling; an address may be in several pools', async () => {
    const res = await api.post('/v1/ip-pools', { name: 'transactional', ips: ['127.0.0.3', '2001:DB8:0::10'] });
    assert.equal(res.status, 201, res.text);
    const pool = res.body as PoolBody;
    assert.match(pool.id, /^pool_[0-9a-z]{26}$/);
    assert.equal(pool.default, false);
    assert.equal(pool.created_at, new Date(clock.now()).toISOString());
    assert.deepEqual(pool.ips.map((i) => i.address), ['127.0.0.3', '2001:db8::10']);
    assert.deepEqual([ipOf(pool, '2001:db8::10').family, ipOf(pool, '2001:db8::10').weight, ipOf(pool, '2001:db8::10').hostname], ['ipv6', 3, 'out6.pigeon.test']);
    assert.equal((await api.post('/v1/ip-pools', { name: 'marketing', ips: ['127.0.0.3'] })).status, 201);
  });

  it('an unknown IP is 422 naming it as ips[i], and nothing is written', async () => {
    const before = await app.db('ip_pools').count({ n: '*' }).first();
    const res = await api.post('/v1/ip-pools', { name: 'bad', ips: ['127.0.0.2', '192.0.2.99'] });
    assert.equal(res.status, 422);
    assert.deepEqual([res.body.error.code, res.body.error.param], ['unknown_ip', 'ips[1]']);
    assert.match(res.body.error.message, /192\.0\.2\.99/);
    const invalid = await api.post('/v1/ip-pools', { name: 'bad', ips: ['not-an-ip'] });
    assert.deepEqual([invalid.status, invalid.body.error.code, invalid.body.error.param], [422, 'invalid_ip', 'ips[0]']);
    assert.deepEqual(await app.db('ip_pools').count({ n: '*' }).first(), before);
  });

  it('names are [a-z0-9-]{1,64}, unique per account, and `default` is taken', async () => {
    for (const name of ['', 'Upper', 'a_b', 'a b', 'x'.repeat(65)]) {
      const res = await api.post('/v1/ip-pools', { name, ips: ['127.0.0.2'] });
      assert.deepEqual([res.status, res.body.error.param], [422, 'name'], name);
    }
    assert.equal((await api.post('/v1/ip-pools', { name: 'p', ips: [] })).status, 422);
    assert.equal((await api.post('/v1/ip-pools', { name: 'p', ips: ['127.0.0.2'], extra: 1 })).status, 422);
    assert.equal((await api.post('/v1/ip-pools', { name: 'dup', ips: ['127.0.0.2'] })).status, 201);
    const dup = await api.post('/v1/ip-pools', { name: 'dup', ips: ['127.0.0.3'] });
    assert.deepEqual([dup.status, dup.body.error.code], [409, 'pool_exists']);
    const dflt = await api.post('/v1/ip-pools', { name: 'default', ips: ['127.0.0.3'] });
    assert.deepEqual([dflt.status, dflt.body.error.code], [409, 'pool_exists']);
  });

  it('the list is paginated newest first, default on top, with a total', async () => {
    const fresh = await startTestApp({ ips: IPS });
    try {
      const live = await liveClient(fresh);
      for (const name of ['one', 'two', 'three']) assert.equal((await live.post('/v1/ip-pools', { name, ips: ['127.0.0.2'] })).status, 201);
      const first = await fresh.api.get('/v1/ip-pools?limit=2');
      assert.deepEqual(first.body.data.map((p: PoolBody) => p.name), ['default', 'three']);
      assert.deepEqual([first.body.pagination.has_more, first.body.pagination.total], [true, 4]);
      const second = await fresh.api.get(`/v1/ip-pools?limit=2&cursor=${first.body.pagination.next_cursor}`);
      assert.deepEqual(second.body.data.map((p: PoolBody) => p.name), ['two', 'one']);
      assert.deepEqual(second.body.pagination, { has_more: false, next_cursor: null, total: 4 });
      const one = await fresh.api.get('/v1/ip-pools?limit=1');
      assert.deepEqual([one.body.data.map((p: PoolBody) => p.name), one.body.pagination.next_cursor], [['default'], 'pool_default']);
      const rest = await fresh.api.get('/v1/ip-pools?limit=1&cursor=pool_default');
      assert.deepEqual(rest.body.data.map((p: PoolBody) => p.name), ['three']);
    } finally {
      await fresh.stop();
    }
  });

  it('a pool can be read, renamed, given other IPs and an overflow; 404 for an unknown one', async () => {
    await api.post('/v1/ip-pools', { name: 'editable', ips: ['127.0.0.2'] });
    assert.equal((await api.get('/v1/ip-pools/editable')).body.name, 'editable');
    assert.equal((await api.get('/v1/ip-pools/nope')).status, 404);
    const renamed = await api.patch('/v1/ip-pools/editable', { name: 'edited', ips: ['127.0.0.3', '127.0.0.2'], overflow: 'default' });
    assert.equal(renamed.status, 200, renamed.text);
    assert.deepEqual([renamed.body.name, renamed.body.overflow, renamed.body.ips.map((i: { address: string }) => i.address)], ['edited', 'default', ['127.0.0.2', '127.0.0.3']]);
    assert.equal((await api.get('/v1/ip-pools/editable')).status, 404);
    const badIp = await api.patch('/v1/ip-pools/edited', { ips: ['127.0.0.2', '10.9.9.9'] });
    assert.deepEqual([badIp.status, badIp.body.error.param], [422, 'ips[1]']);
    const self = await api.patch('/v1/ip-pools/edited', { overflow: 'edited' });
    assert.deepEqual([self.status, self.body.error.param], [422, 'overflow']);
    const missing = await api.patch('/v1/ip-pools/edited', { overflow: 'nowhere' });
    assert.deepEqual([missing.status, missing.body.error.code], [422, 'unknown_pool']);
    assert.equal((await api.patch('/v1/ip-pools/edited', {})).status, 422);
    assert.equal((await api.patch('/v1/ip-pools/edited', { name: 'dup' })).body.error.code, 'pool_exists');
  });

  it('default cannot be renamed, given IPs or deleted, but takes an overflow', async () => {
    const rename = await api.patch('/v1/ip-pools/default', { name: 'other' });
    assert.deepEqual([rename.status, rename.body.error.code], [409, 'default_pool']);
    assert.equal((await api.patch('/v1/ip-pools/default', { ips: ['127.0.0.2'] })).status, 409);
    const del = await api.delete('/v1/ip-pools/default');
    assert.deepEqual([del.status, del.body.error.code], [409, 'default_pool']);
    const overflow = await api.patch('/v1/ip-pools/default', { overflow: 'marketing' });
    assert.deepEqual([overflow.status, overflow.body.overflow], [200, 'marketing']);
    await api.patch('/v1/ip-pools/default', { overflow: 'queue' });
  });

  it('a pool named by scheduled or queued messages cannot be deleted or renamed (409) until they have left the queue', async () => {
    await api.post('/v1/ip-pools', { name: 'busy', ips: ['127.0.0.2'] });
    const queued = await insertQueued(app.db, accountId, 'busy', { now: clock.now() });
    const scheduled = await insertQueued(app.db, accountId, 'busy', { now: clock.now(), sendAt: clock.now() + 3_600_000 });
    const res = await api.delete('/v1/ip-pools/busy');
    assert.deepEqual([res.status, res.body.error.code], [409, 'pool_in_use']);
    assert.match(res.body.error.message, /^2 /);
    assert.equal((await api.patch('/v1/ip-pools/busy', { name: 'busier' })).body.error.code, 'pool_in_use');
    await app.db('messages').whereIn('id', [queued, scheduled]).update({ status: 'delivered', next_attempt_at: null });
    assert.equal((await api.patch('/v1/ip-pools/busy', { name: 'busier' })).status, 200);
    assert.deepEqual((await api.delete('/v1/ip-pools/busier')).body, { name: 'busier', deleted: true });
    assert.equal((await api.get('/v1/ip-pools/busier')).status, 404);
  });

  it('a pool another pool overflows into cannot be deleted; renaming it follows the overflow', async () => {
    await api.post('/v1/ip-pools', { name: 'spill', ips: ['127.0.0.3'] });
    await api.post('/v1/ip-pools', { name: 'source', ips: ['127.0.0.2'] });
    assert.equal((await api.patch('/v1/ip-pools/source', { overflow: 'spill' })).status, 200);
    assert.equal((await api.delete('/v1/ip-pools/spill')).body.error.code, 'pool_in_use');
    await api.patch('/v1/ip-pools/spill', { name: 'spill2' });
    assert.equal((await api.get('/v1/ip-pools/source')).body.overflow, 'spill2');
  });

  it('a sandbox key reads pools but cannot create, change or delete one (403 live_key_required), and nothing is written', async () => {
    const sandbox = app.api;
    assert.equal((await sandbox.get('/v1/ip-pools')).status, 200);
    assert.equal((await sandbox.get('/v1/ip-pools/default')).status, 200);
    const before = await app.db('ip_pools').orderBy('id');
    const attempts = [
      await sandbox.post('/v1/ip-pools', { name: 'sneaky', ips: ['127.0.0.2'] }),
      await sandbox.patch('/v1/ip-pools/marketing', { ips: ['127.0.0.2'] }),
      await sandbox.patch('/v1/ip-pools/default', { overflow: 'marketing' }),
      await sandbox.delete('/v1/ip-pools/marketing'),
    ];
    for (const res of attempts) assert.deepEqual([res.status, res.body.error.type, res.body.error.code], [403, 'permission_error', 'live_key_required'], res.text);
    assert.deepEqual(await app.db('ip_pools').orderBy('id'), before);
  });

  it('every pool route needs ip-pools:manage', async () => {
    const key = await createKey(app, 'live', ['messages:send']);
    const other = api.withKey(key);
    assert.equal((await other.get('/v1/ip-pools')).status, 403);
    assert.equal((await other.post('/v1/ip-pools', { name: 'x', ips: ['127.0.0.2'] })).status, 403);
    assert.equal((await other.post('/v1/ip-pools/default/warmup', {})).status, 403);
    assert.equal((await other.post('/v1/ip-pools/default/warmup/pause', {})).status, 403);
    assert.equal((await other.delete('/v1/ip-pools/marketing')).status, 403);
    const allowed = api.withKey(await createKey(app, 'live', ['ip-pools:manage']));
    assert.equal((await allowed.get('/v1/ip-pools')).status, 200);
  });

  it('pools are per account: another account sees only its own and the default', async () => {
    await app.db('accounts').insert({ id: 'acc_other', name: 'other', created_at: clock.now() });
    const created = await makeKey(app.db, { accountId: 'acc_other', mode: 'live', name: 'k', scopes: ['ip-pools:manage'] }, clock.now());
    const other = api.withKey(created.secret);
    const list = await other.get('/v1/ip-pools');
    assert.deepEqual(list.body.data.map((p: PoolBody) => p.name), ['default']);
    assert.equal((await other.post('/v1/ip-pools', { name: 'transactional', ips: ['127.0.0.2'] })).status, 201);
  });

  it('the OpenAPI document describes the pool routes, extensions marked', async () => {
    const doc = (await api.get('/v1/openapi.json')).body;
    assert.ok(doc.paths['/v1/ip-pools'].post);
    assert.ok(doc.paths['/v1/ip-pools/{name}/warmup'].post);
    assert.equal(doc.paths['/v1/ip-pools/{name}/warmup/pause'].post['x-pigeon-extension'], true);
  });
});
