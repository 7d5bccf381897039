// Warm-up and throttling end to end: the MTA sends through pool addresses on loopback to loopback MX sinks
// (a Gmail-like MX on 127.0.0.2, another on 127.0.0.3), with a fake clock that crosses hours and midnight UTC.
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createApp } from '../../src/app';
import { FakeClock } from '../../src/clock';
import type { Mta } from '../../src/delivery/mta';
import { startSmtpSink, type SinkContext, type SinkReply, type SmtpSink } from '../support/smtp-sink';
import { startDnsServer, type TestDnsServer } from '../support/dns-server';
import { ApiClient, createKey, onPostgres, scrapeMetrics, testConfig, type TestApp } from '../support/app';
import { deliveryConfig, sendMessage, pointMx, startWorld, type World } from '../delivery/world';
import { ipOf, liveClient } from './helpers';

// Both dedicated to the default account, whose live key manages their pools and warm-up through the API.
const WARMING = { address: '127.0.0.10', hostname: 'out10.pigeon.test', account: 'default' };
const SEASONED = { address: '127.0.0.11', hostname: 'out11.pigeon.test', account: 'default' };
const at = (day: number, hour: number, minute = 0) => Date.UTC(2026, 2, day, hour, minute);

describe('warm-up and throttling through the MTA', () => {
  let gmailMx: SmtpSink;
  let otherMx: SmtpSink;
  let dns: TestDnsServer;
  let world: World | undefined;
  let gmailReply: ((ctx: SinkContext) => SinkReply | undefined) | undefined;

  before(async () => {
    gmailMx = await startSmtpSink({ host: '127.0.0.2', reply: (ctx) => gmailReply?.(ctx) });
    otherMx = await startSmtpSink({ host: '127.0.0.3', port: gmailMx.port });
    dns = await startDnsServer();
    pointMx(dns, 'gmail.test', [{ name: 'gmail-smtp-in.l.google.com', address: '127.0.0.2' }, { name: 'alt1.gmail-smtp-in.l.google.com', address: '127.0.0.2' }]);
    pointMx(dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.3' }]);
  });
  after(async () => {
    await Promise.all([gmailMx.close(), otherMx.close(), dns.close()]);
  });
  afterEach(async () => {
    await world?.stop();
    world = undefined;
    gmailReply = undefined;
    gmailMx.messages.length = 0;
    otherMx.messages.length = 0;
  });

  async function begin(now: number, pools: Record<string, string[]>): Promise<World> {
    world = await startWorld({ port: gmailMx.port, clock: new FakeClock(now), dns, config: { ips: [WARMING, SEASONED] } });
    const live = await liveClient(world.app);
    for (const [name, ips] of Object.entries(pools)) assert.equal((await live.post('/v1/ip-pools', { name, ips })).status, 201);
    return world;
  }

  async function warmUp(w: World, pool: string, body: Record<string, unknown> = {}) {
    const res = await (await liveClient(w.app)).post(`/v1/ip-pools/${pool}/warmup`, body);
    assert.equal(res.status, 200, res.text);
  }

  async function queue(w: World, n: number, domain: string, ipPool?: string): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push(await sendMessage(w, { to: `r${i}@${domain}`, ipPool }));
    return ids;
  }

  const statuses = async (w: World, ids: string[]) => {
    const rows: Array<{ status: string }> = await w.app.db('messages').whereIn('id', ids).select('status');
    return rows.reduce<Record<string, number>>((acc, r) => ({ ...acc, [r.status]: (acc[r.status] ?? 0) + 1 }), {});
  };
  const from = (sink: SmtpSink) => sink.messages.reduce<Record<string, number>>((acc, m) => ({ ...acc, [m.remoteAddress]: (acc[m.remoteAddress] ?? 0) + 1 }), {});

  it('a warming IP with a cap of 50 sends 50 on day 1 and the rest waits, not counted as attempts; after midnight UTC day 2\'s cap applies, spread over the hours', async () => {
    const w = await begin(at(2, 23, 0), { fresh: [WARMING.address] });
    await warmUp(w, 'fresh');
    const ids = await queue(w, 60, 'dest.test', 'fresh');
    await w.mta.runOnce();
    assert.deepEqual(from(otherMx), { [WARMING.address]: 50 });
    assert.equal(otherMx.messages[0].clientHostname, WARMING.hostname);
    assert.deepEqual(await statuses(w, ids), { delivered: 50, queued: 10 });
    const waiting = await w.app.db('messages').whereIn('id', ids).where({ status: 'queued' });
    for (const m of waiting) {
      assert.equal(m.attempts, 0);
      assert.ok(Number(m.next_attempt_at) >= at(3, 0) && Number(m.next_attempt_at) < at(3, 0, 5), `retry ${new Date(Number(m.next_attempt_at)).toISOString()}`);
      assert.match(m.last_response, /IP pool "fresh" is at its warm-up cap/);
    }
    assert.equal(await w.app.db('message_attempts').whereIn('message_id', waiting.map((m: { id: string }) => m.id)).first(), undefined);

    w.clock.set(at(3, 0, 30));
    await w.mta.runOnce();
    assert.equal(otherMx.messages.length, 54, 'hour 0 of day 2 allows 100 × 1/24 = 4');
    const ip = ipOf((await w.app.api.get('/v1/ip-pools/fresh')).body, WARMING.address);
    assert.deepEqual([ip.warmup.day, ip.warmup.today_cap, ip.usage_today.total], [2, 100, 4]);
    w.clock.set(at(3, 2, 30));
    await w.mta.runOnce();
    assert.deepEqual(await statuses(w, ids), { delivered: 60 });
  });

  it('overflow to a warm pool sends the excess from the warm pool\'s address', async () => {
    const w = await begin(at(2, 23, 0), { fresh: [WARMING.address], seasoned: [SEASONED.address] });
    await warmUp(w, 'fresh', { overflow: 'seasoned' });
    const ids = await queue(w, 60, 'dest.test', 'fresh');
    await w.mta.runOnce();
    assert.deepEqual(from(otherMx), { [WARMING.address]: 50, [SEASONED.address]: 10 });
    assert.ok(otherMx.messages.filter((m) => m.remoteAddress === SEASONED.address).every((m) => m.clientHostname === SEASONED.hostname));
    assert.deepEqual(await statuses(w, ids), { delivered: 60 });
  });

  it('per-provider budgets: a Gmail destination (recognised by its MX) gets 40% of the cap, others the rest', async () => {
    const w = await begin(at(2, 23, 0), { fresh: [WARMING.address] });
    await warmUp(w, 'fresh');
    const gmail = await queue(w, 30, 'gmail.test', 'fresh');
    const other = await queue(w, 30, 'dest.test', 'fresh');
    await w.mta.runOnce();
    assert.deepEqual([gmailMx.messages.length, otherMx.messages.length], [20, 30]);
    assert.deepEqual(await statuses(w, gmail), { delivered: 20, queued: 10 });
    assert.deepEqual(await statuses(w, other), { delivered: 30 });
    const ip = ipOf((await w.app.api.get('/v1/ip-pools/fresh')).body, WARMING.address);
    assert.deepEqual(ip.usage_today.by_provider, { gmail: 20, other: 30 });
    const waiting = await w.app.db('messages').whereIn('id', gmail).where({ status: 'queued' }).first();
    assert.match(waiting.last_response, /at its gmail budget for gmail destinations/);
  });

  it('the default pool spreads by weight and picks the IP family the MX hosts have', async () => {
    const v6 = await startSmtpSink({ host: '::1', port: gmailMx.port });
    try {
      dns.set('v6.test', [{ type: 'MX', data: { preference: 10, exchange: 'mx.v6.test' } }]);
      dns.set('mx.v6.test', [{ type: 'AAAA', data: '::1' }]);
      world = await startWorld({
        port: gmailMx.port, clock: new FakeClock(at(2, 12)), dns,
        config: { ips: [{ ...WARMING, weight: 3 }, { ...SEASONED, weight: 1 }, { address: '::1', hostname: 'out6.pigeon.test' }] },
      });
      await queue(world, 40, 'dest.test');
      await queue(world, 5, 'v6.test');
      await world.mta.runOnce();
      assert.deepEqual(from(otherMx), { [WARMING.address]: 30, [SEASONED.address]: 10 });
      assert.deepEqual(v6.messages.map((m) => m.remoteAddress), ['::1', '::1', '::1', '::1', '::1']);
    } finally {
      await v6.close();
    }
  });

  it('a throttling reply slows the IP toward that provider: lower rate, one in flight, shown in GET and /metrics', async () => {
    const w = await begin(at(2, 12, 0), { solo: [WARMING.address], other: [SEASONED.address] });
    gmailReply = (ctx) => (ctx.stage === 'rcpt' && ctx.rcpt === 'first@gmail.test' && ctx.attempt === 1
      ? { code: 421, message: '4.7.28 Our system has detected an unusual rate of unsolicited mail originating from your IP address' } : undefined);
    const first = await sendMessage(w, { to: 'first@gmail.test', ipPool: 'solo' });
    await w.mta.runOnce();
    assert.equal((await w.app.db('messages').where({ id: first }).first()).status, 'deferred');
    const ip = ipOf((await w.app.api.get('/v1/ip-pools/solo')).body, WARMING.address);
    assert.deepEqual(ip.throttles.map((t) => [t.destination, t.reason, t.level, t.rate_per_minute, t.max_in_flight]), [['gmail', 'rate_limited', 1, 20, 1]]);

    // From that IP, Gmail now gets one message every 3 s; other providers, and the other IP, are not slowed.
    const slowed = await queue(w, 6, 'gmail.test', 'solo');
    await queue(w, 3, 'dest.test', 'solo');
    await queue(w, 2, 'gmail.test', 'other');
    await w.mta.runOnce();
    assert.deepEqual(from(gmailMx), { [SEASONED.address]: 2 }, 'the throttled IP waits its first gap');
    assert.deepEqual(from(otherMx), { [WARMING.address]: 3 });
    for (let step = 1; step <= 3; step++) {
      w.clock.advance(3_000);
      await w.mta.runOnce();
      assert.equal(from(gmailMx)[WARMING.address], step, `one message per 3 s gap (step ${step})`);
    }
    assert.deepEqual(await statuses(w, slowed), { delivered: 3, queued: 3 });
    const waiting = await w.app.db('messages').whereIn('id', slowed).where({ status: 'queued' });
    assert.ok(waiting.every((m: { attempts: number; last_response: string }) => m.attempts === 0 && /cooling down after throttling replies/.test(m.last_response)));
    const metrics = await scrapeMetrics(w.app);
    assert.match(metrics, /pigeon_ip_throttle_level\{address="127\.0\.0\.10",destination="gmail",reason="rate_limited"\} 1/);
    assert.match(metrics, /pigeon_ip_throttle_replies_total\{address="127\.0\.0\.10",destination="gmail",reason="rate_limited"\} 1/);
  });

  it('a send through the API names its pool with ip_pool, and leaves from that pool\'s address', async () => {
    const w = await begin(at(2, 12, 0), { seasoned: [SEASONED.address] });
    const live = w.app.api.withKey(await createKey(w.app, 'live', ['messages:send']));
    const res = await live.post('/v1/messages/send', { from: 'app@sender.test', to: ['a@dest.test', 'b@gmail.test'], subject: 'Hi', text: 'Hello', ip_pool: 'seasoned' });
    assert.equal(res.status, 202, res.text);
    assert.equal((await live.post('/v1/messages/send', { from: 'app@sender.test', to: ['a@dest.test'], subject: 'Hi', text: 'x', ip_pool: 'nope' })).status, 422);
    await w.mta.runOnce();
    assert.deepEqual([from(otherMx), from(gmailMx)], [{ [SEASONED.address]: 1 }, { [SEASONED.address]: 1 }]);
    const ip = ipOf((await w.app.api.get('/v1/ip-pools/seasoned')).body, SEASONED.address);
    assert.deepEqual(ip.usage_today.by_provider, { gmail: 1, other: 1 });
  });

  // One node per SQLite file sends everything it has: the per-node claim scope (pools/node-scope.ts) is for
  // several nodes on PostgreSQL, where a pool none of whose addresses is here waits for the node that has them.
  it('a read of the pool while its statistics are being written counts each send once', { skip: !onPostgres && 'SQLite: the write and the read share the one writer connection, so they cannot overlap' }, async () => {
    const w = await begin(at(2, 12, 0), { seasoned: [SEASONED.address] });
    const live = w.app.api.withKey(await createKey(w.app, 'live', ['messages:send']));
    assert.equal((await live.post('/v1/messages/send', { from: 'app@sender.test', to: ['a@dest.test', 'b@gmail.test'], subject: 'Hi', text: 'Hello', ip_pool: 'seasoned' })).status, 202);
    await w.mta.runOnce();
    // Another session holds the table against writes (reads go on), so the pools worker's write stays in flight.
    const blocker = await w.app.db.transaction();
    await blocker.raw('LOCK TABLE ip_daily_usage IN EXCLUSIVE MODE');
    const flushed = w.app.workers.find((x) => x.name === 'pools')?.runOnce?.();
    await new Promise((r) => setTimeout(r, 100));
    const read = w.app.api.get('/v1/ip-pools/seasoned');
    setTimeout(() => void blocker.commit(), 300);
    const ip = ipOf((await read).body, SEASONED.address);
    await flushed;
    assert.deepEqual(ip.usage_today.by_provider, { gmail: 1, other: 1 }, 'the batch in flight is neither in the table nor pending: the read waits for it');
  });

  it('SQLite: a pool whose address left the config still overflows into a pool that has one', { skip: onPostgres && 'PostgreSQL: such a pool waits for a node with its address (docs/postgres.md)' }, async () => {
    const w = await begin(at(2, 12, 0), { fresh: [WARMING.address], seasoned: [SEASONED.address] });
    assert.equal((await (await liveClient(w.app)).patch('/v1/ip-pools/fresh', { overflow: 'seasoned' })).status, 200);
    await w.app.close();
    const quiet = new Writable({ write: (_c, _e, cb) => cb() });
    const app = await createApp(testConfig((w.app as TestApp).dataDir, deliveryConfig(dns.address, gmailMx.port, { ips: [SEASONED] })), { clock: w.clock, logStream: quiet });
    const restarted: World = { ...w, app: app as unknown as TestApp, live: new ApiClient(app.http.url, w.live.key), mta: app.workers.find((x) => x.name === 'delivery') as Mta,
      stop: async () => {
        await app.close();
        await (w.app as TestApp).stop();
      } };
    world = restarted;
    const ids = await queue(restarted, 2, 'dest.test', 'fresh');
    await restarted.mta.runOnce();
    assert.deepEqual(await statuses(restarted, ids), { delivered: 2 });
    assert.deepEqual(from(otherMx), { [SEASONED.address]: 2 });
  });

  it('a restart in the middle of the day keeps the counts', async () => {
    const w = await begin(at(2, 23, 0), { fresh: [WARMING.address] });
    await warmUp(w, 'fresh');
    await queue(w, 30, 'dest.test', 'fresh');
    await w.mta.runOnce();
    assert.equal(otherMx.messages.length, 30);
    await w.app.close();
    const quiet = new Writable({ write: (_c, _e, cb) => cb() });
    const app = await createApp(testConfig((w.app as TestApp).dataDir, deliveryConfig(dns.address, gmailMx.port, { ips: [WARMING, SEASONED] })), { clock: w.clock, logStream: quiet });
    const restarted: World = {
      ...w,
      app: app as unknown as TestApp,
      live: new ApiClient(app.http.url, w.live.key),
      mta: app.workers.find((x) => x.name === 'delivery') as Mta,
      stop: async () => {
        await app.close();
        await (w.app as TestApp).stop();
      },
    };
    world = restarted;
    const ids = await queue(restarted, 30, 'dest.test', 'fresh');
    await restarted.mta.runOnce();
    assert.equal(otherMx.messages.length, 50);
    assert.deepEqual(await statuses(restarted, ids), { delivered: 20, queued: 10 });
  });
});
