/** Operator routes: only an admin's session reaches them; queue pause/resume against a real sink. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink';
import { liveApi, ApiClient } from '../support/app';
import { ConsoleClient, makeUser, signedIn } from '../support/console';
import { createAccount } from '../../src/auth/accounts';
import { messageRow, pointMx, sendMessage, startWorld, type World } from '../delivery/world';

const OPERATOR_ROUTES: Array<[string, string, unknown?]> = [
  ['GET', '/v1/operator/accounts'],
  ['GET', '/v1/operator/users'],
  ['POST', '/v1/operator/users', { email: 'x@example.com', role: 'admin' }],
  ['DELETE', '/v1/operator/users/usr_x'],
  ['GET', '/v1/operator/queue'],
  ['POST', '/v1/operator/queue/dest.test/pause', {}],
  ['POST', '/v1/operator/queue/dest.test/resume', {}],
  ['GET', '/v1/operator/doctor'],
  ['POST', '/v1/operator/ip-pools/default/warmup/start', {}],
];

describe('operator routes', () => {
  let sink: SmtpSink;
  let world: World;
  let admin: ConsoleClient;
  before(async () => {
    sink = await startSmtpSink({ host: '127.0.0.2' });
    world = await startWorld({ port: sink.port });
    pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.2' }]);
    await createAccount(world.app.db, 'other', world.clock.now());
    await makeUser(world.app, 'root@example.com', 'admin');
    await makeUser(world.app, 'dev@example.com', 'member', 'default');
    admin = await signedIn(world.app, 'root@example.com');
  });
  after(async () => {
    await world.stop();
    await sink.close();
  });

  test('a member and every API key get 403 operator_only, and nothing changes', async () => {
    const member = await signedIn(world.app, 'dev@example.com');
    const live: ApiClient = await liveApi(world.app);
    const callers: Array<[string, (m: string, p: string, b?: unknown) => Promise<{ status: number; body: any }>]> = [
      ['member', (m, p, b) => member.request(m, p, b)],
      ['live key with every scope', (m, p, b) => live.request(m, p, b)],
      ['sandbox key', (m, p, b) => world.app.api.request(m, p, b)],
    ];
    for (const [who, call] of callers) {
      for (const [method, path, body] of OPERATOR_ROUTES) {
        const res = await call(method, path, body);
        assert.equal(res.status, 403, `${who}: ${method} ${path}`);
        assert.equal(res.body.error.code, 'operator_only', `${who}: ${method} ${path}`);
      }
    }
    assert.equal(await world.app.db('paused_destinations').count({ n: '*' }).first().then((r) => Number(r?.n)), 0);
    assert.equal((await world.app.db('users').where({ email: 'x@example.com' })).length, 0);
    assert.equal((await admin.post('/v1/operator/queue/dest.test/pause', {}, { 'x-csrf-token': '' })).status, 403, 'an admin needs the CSRF token too');
  });

  test('an admin in the sandbox view (X-Pigeon-Mode: test) cannot pause a destination: operator routes act on live mail', async () => {
    const res = await admin.post('/v1/operator/queue/gmail.test/pause', {}, { 'x-pigeon-mode': 'test' });
    assert.equal(res.status, 403, res.text);
    assert.equal(res.body.error.code, 'live_key_required');
    assert.equal(await world.app.db('paused_destinations').count({ n: '*' }).first().then((r) => Number(r?.n)), 0);
  });

  test('a paused destination is not delivered to until resumed; the queue shows it', async () => {
    const paused = await admin.post('/v1/operator/queue/DEST.test/pause');
    assert.equal(paused.status, 200, paused.text);
    assert.deepEqual(paused.body, { domain: 'dest.test', paused: true });
    const id = await sendMessage(world, { to: 'ann@dest.test' });
    await world.mta.runOnce();
    assert.equal((await messageRow(world, id)).status, 'queued', 'not claimed while paused');
    assert.equal(sink.messages.length, 0);

    const queue = (await admin.get('/v1/operator/queue')).body.data;
    const dest = queue.find((d: { domain: string }) => d.domain === 'dest.test');
    assert.deepEqual({ ...dest, oldest_at: typeof dest.oldest_at }, { domain: 'dest.test', queued: 1, deferred: 0, oldest_at: 'string', paused: true, last_error: null });

    assert.equal((await admin.post('/v1/operator/queue/dest.test/resume')).status, 200);
    await world.mta.runOnce();
    await sink.waitFor(1);
    assert.equal((await messageRow(world, id)).status, 'delivered');
    assert.equal((await admin.post('/v1/operator/queue/dest.test/resume')).status, 404, 'not paused any more');
    assert.equal((await admin.get('/v1/operator/queue')).body.data.some((d: { domain: string }) => d.domain === 'dest.test'), false);
  });

  test('accounts with usage; users created with a one-time link, listed and deleted', async () => {
    const accounts = (await admin.get('/v1/operator/accounts')).body.data;
    assert.deepEqual(accounts.map((a: { name: string }) => a.name), ['default', 'other']);
    assert.ok(accounts[0].usage.billable_messages >= 1, JSON.stringify(accounts[0]));
    // exactly the live sends recorded today: the totals' row set alone, not the per-domain rows beside it
    const sentToday = Number((await world.app.db('events').where({ type: 'message.sent', mode: 'live', account_id: world.accountId }).count({ n: '*' }))[0].n);
    assert.ok(sentToday >= 1);
    assert.equal(accounts[0].messages_today, sentToday);

    const created = await admin.post('/v1/operator/users', { email: 'New@Example.com', role: 'member', account: 'other' });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.user.email, 'new@example.com');
    assert.equal(created.body.user.account, 'other');
    assert.equal(created.body.user.password_set, false);
    const token = created.body.set_password_url.split('/').pop();
    assert.equal((await new ApiClient(world.app.http.url, '').post('/v1/session/password', { token, password: 'twelve chars!' })).status, 204);
    const member = await signedIn(world.app, 'new@example.com').catch(() => undefined);
    assert.equal(member, undefined, 'the helper signs in with its own password');
    assert.equal((await new ConsoleClient(world.app.http.url).signIn('new@example.com', 'twelve chars!')).status, 200);

    assert.equal((await admin.post('/v1/operator/users', { email: 'new@example.com', role: 'admin' })).status, 409);
    assert.equal((await admin.post('/v1/operator/users', { email: 'm@example.com', role: 'member' })).status, 422, 'a member needs an account');
    const users = (await admin.get('/v1/operator/users')).body.data;
    assert.deepEqual(users.map((u: { email: string }) => u.email).sort(), ['dev@example.com', 'new@example.com', 'root@example.com']);
    assert.equal((await admin.delete(`/v1/operator/users/${created.body.user.id}`)).status, 204);
    assert.equal((await new ConsoleClient(world.app.http.url).signIn('new@example.com', 'twelve chars!')).status, 401);
    const self = users.find((u: { email: string }) => u.email === 'root@example.com');
    assert.equal((await admin.delete(`/v1/operator/users/${self.id}`)).status, 409);
    assert.equal((await admin.delete('/v1/operator/users/usr_nope')).status, 404);
  });

  test('doctor runs the pigeon doctor checks', async () => {
    const res = await admin.get('/v1/operator/doctor');
    assert.equal(res.status, 200);
    const database = res.body.checks.find((c: { name: string }) => c.name === 'database');
    assert.deepEqual([database.ok, database.status], [true, 'ok']);
    assert.ok(res.body.checks.length >= 4);
    for (const c of res.body.checks) assert.equal(typeof c.detail, 'string');
  });

  test('warm-up of a pool: start, pause, stop; an unknown pool is 404', async () => {
    const start = await admin.post('/v1/operator/ip-pools/default/warmup/start', { schedule: [10, 20] });
    assert.equal(start.status, 200, start.text);
    assert.deepEqual(start.body.data.map((ip: { address: string; warmup: { status: string; today_cap: number } }) => [ip.address, ip.warmup.status, ip.warmup.today_cap]), [['127.0.0.1', 'warming', 10]]);
    const overview = (await admin.get('/v1/overview')).body;
    assert.deepEqual(overview.warmup.map((w: Record<string, unknown>) => [w.pool, w.ip, w.day, w.cap, w.status]), [['default', '127.0.0.1', 1, 10, 'warming']]);
    assert.equal(typeof overview.warmup[0].sent_today, 'number');
    assert.equal((await admin.post('/v1/operator/ip-pools/default/warmup/pause')).body.data[0].warmup.status, 'paused');
    assert.equal((await admin.post('/v1/operator/ip-pools/default/warmup/stop')).body.data[0].warmup.status, 'warm');
    assert.equal((await admin.post('/v1/operator/ip-pools/default/warmup/resume')).status, 409, 'nothing in warm-up');
    assert.equal((await admin.post('/v1/operator/ip-pools/nope/warmup/start')).status, 404);
    assert.equal((await admin.post('/v1/operator/ip-pools/default/warmup/explode')).status, 400);
  });
});
