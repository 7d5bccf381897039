// Warm-up budgets against the database with a fake clock: daily caps, hourly spreading, days of actual sending,
// provider shares, refunds, completion, restarts and concurrent senders.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createApp } from '../../src/app';
import { FakeClock } from '../../src/clock';
import { ipRuntimeFor, type IpRuntime } from '../../src/pools/runtime';
import { startTestApp, testConfig, type TestApp } from '../support/app';
import { ipOf, IPS, liveClient } from './helpers';

const at = (day: number, hour: number, minute = 0) => Date.UTC(2026, 2, day, hour, minute);
/** 127.0.0.2 is dedicated to the default account, so its live key manages the warm-up through the API. */
const OWN_IPS = IPS.map((ip) => (ip.address === '127.0.0.2' ? { ...ip, account: 'default' } : ip));

async function warmingApp(clock: FakeClock, schedule?: number[], config = {}): Promise<{ app: TestApp; rt: IpRuntime }> {
  const app = await startTestApp({ ips: OWN_IPS, ...config }, { clock });
  const res = await (await liveClient(app)).post('/v1/ip-pools/default/warmup', { ips: ['127.0.0.2'], ...(schedule ? { schedule } : {}) });
  assert.equal(res.status, 200, res.text);
  return { app, rt: ipRuntimeFor(app.deps) };
}

let seq = 0;
/** Admits up to n sends from 127.0.0.2 toward provider (null: other); returns how many got through and the last refusal. */
async function send(rt: IpRuntime, clock: FakeClock, n: number, provider: string | null = null) {
  let ok = 0;
  let refusal: { retryAt: number; limit: string } | undefined;
  for (let i = 0; i < n; i++) {
    const r = await rt.admit({ jobId: `job${++seq}`, address: '127.0.0.2', provider, destination: provider ?? 'domain:dest.test', now: clock.now() });
    if (r.ok) ok++;
    else refusal = r;
  }
  return { ok, refusal };
}

async function warmup(app: TestApp) {
  return ipOf((await app.api.get('/v1/ip-pools/default')).body, '127.0.0.2');
}

describe('warm-up budgets', () => {
  const apps: TestApp[] = [];
  after(async () => {
    for (const a of apps) await a.stop();
  });

  it('a warming IP with a cap of 50 sends 50 on day 1 and the rest waits until midnight UTC', async () => {
    const clock = new FakeClock(at(2, 23, 0));
    const { app, rt } = await warmingApp(clock);
    apps.push(app);
    const { ok, refusal } = await send(rt, clock, 60);
    assert.equal(ok, 50);
    assert.deepEqual(refusal, { ok: false, retryAt: at(3, 0), limit: 'daily' });
    const ip = await warmup(app);
    assert.deepEqual([ip.usage_today.total, ip.usage_today.by_provider.other, ip.warmup.day], [50, 50, 1]);
  });

  it('the next day\'s cap applies after midnight UTC, spread over its hours', async () => {
    const clock = new FakeClock(at(2, 23, 0));
    const { app, rt } = await warmingApp(clock);
    apps.push(app);
    assert.equal((await send(rt, clock, 50)).ok, 50);
    clock.set(at(3, 0, 5));
    const w = await warmup(app);
    assert.deepEqual([w.warmup.day, w.warmup.today_cap, w.warmup.allowed_by_now, w.usage_today.total], [2, 100, 4, 0]);
    const first = await send(rt, clock, 10);
    assert.equal(first.ok, 4, 'hour 0 of day 2 allows 100 × 1/24 = 4');
    clock.set(at(3, 23, 30));
    assert.equal((await send(rt, clock, 200)).ok, 96);
  });

  it('hourly spreading: the allowance grows by cap/24 each hour, so nothing bursts at midnight', async () => {
    const clock = new FakeClock(at(2, 0, 10));
    const { app, rt } = await warmingApp(clock, [240]);
    apps.push(app);
    const h0 = await send(rt, clock, 20);
    assert.deepEqual([h0.ok, h0.refusal?.retryAt], [10, at(2, 1)]);
    clock.set(at(2, 0, 59));
    assert.equal((await send(rt, clock, 5)).ok, 0, 'still hour 0');
    clock.set(at(2, 1, 0));
    assert.equal((await send(rt, clock, 20)).ok, 10);
    clock.set(at(2, 5, 30));
    assert.equal((await send(rt, clock, 100)).ok, 40, 'by 06:00 the allowance is 6 × 10 = 60');
  });

  it('a day with less than half its cap used does not advance the warm-up; days without sending do not count', async () => {
    const clock = new FakeClock(at(2, 23, 0));
    const { app, rt } = await warmingApp(clock);
    apps.push(app);
    assert.equal((await send(rt, clock, 24)).ok, 24);
    clock.set(at(3, 23, 0));
    assert.equal((await warmup(app)).warmup.day, 1, '24 of 50 is less than half');
    assert.equal((await send(rt, clock, 25)).ok, 25);
    clock.set(at(9, 23, 0)); // five days without sending
    assert.equal((await warmup(app)).warmup.day, 2);
    assert.equal((await send(rt, clock, 200)).ok, 100);
    clock.set(at(10, 12, 0));
    assert.equal((await warmup(app)).warmup.day, 3);
  });

  it('per-provider budgets: each provider gets its share of the cap, other destinations the whole cap', async () => {
    const clock = new FakeClock(at(2, 23, 0));
    const { app, rt } = await warmingApp(clock);
    apps.push(app);
    const gmail = await send(rt, clock, 30, 'gmail');
    assert.deepEqual([gmail.ok, gmail.refusal?.limit, gmail.refusal?.retryAt], [20, 'provider', at(3, 0)]);
    assert.equal((await send(rt, clock, 30, 'apple')).ok, 5);
    assert.equal((await send(rt, clock, 30, 'microsoft')).ok, 15);
    assert.equal((await send(rt, clock, 30)).ok, 10, 'the rest of the 50');
    assert.equal((await send(rt, clock, 5, 'yahoo')).ok, 0, 'the IP cap is spent');
    assert.deepEqual((await warmup(app)).usage_today.by_provider, { apple: 5, gmail: 20, microsoft: 15, other: 10 });
  });

  it('a send that reached no server is given back; one the server answered is not', async () => {
    const clock = new FakeClock(at(2, 23, 0));
    const { app, rt } = await warmingApp(clock, [3]);
    apps.push(app);
    for (const id of ['a', 'b', 'c']) assert.equal((await rt.admit({ jobId: id, address: '127.0.0.2', provider: null, destination: 'domain:x.test', now: clock.now() })).ok, true);
    assert.equal((await send(rt, clock, 1)).ok, 0);
    await rt.settle('a', { kind: 'deferred', code: null, enhancedCode: null, response: 'ECONNREFUSED: connect refused' });
    await rt.settle('b', { kind: 'bounced', code: 550, enhancedCode: '5.1.1', response: '550 5.1.1 no such user' });
    assert.equal((await warmup(app)).usage_today.total, 2);
    assert.equal((await send(rt, clock, 2)).ok, 1);
  });

  it('after the last day of its schedule an IP is warm (completed) and no longer capped', async () => {
    const clock = new FakeClock(at(2, 23, 0));
    const { app, rt } = await warmingApp(clock, [2]);
    apps.push(app);
    assert.equal((await send(rt, clock, 5)).ok, 2);
    clock.set(at(3, 1, 0));
    assert.equal((await send(rt, clock, 30)).ok, 30);
    const w = (await warmup(app)).warmup;
    assert.deepEqual([w.status, w.finished_reason, w.today_cap, w.finished_at], ['warm', 'completed', null, new Date(at(3, 1, 0)).toISOString()]);
  });

  it('a paused IP keeps its cap but does not advance', async () => {
    const clock = new FakeClock(at(2, 23, 0));
    const { app, rt } = await warmingApp(clock);
    apps.push(app);
    assert.equal((await send(rt, clock, 50)).ok, 50);
    const live = await liveClient(app);
    assert.equal((await live.post('/v1/ip-pools/default/warmup/pause', { ips: ['127.0.0.2'] })).status, 200);
    clock.set(at(3, 23, 0));
    assert.equal((await send(rt, clock, 60)).ok, 50);
    assert.equal((await warmup(app)).warmup.day, 1);
    assert.equal((await live.post('/v1/ip-pools/default/warmup/resume', { ips: ['127.0.0.2'] })).status, 200);
    clock.set(at(4, 23, 0));
    assert.equal((await warmup(app)).warmup.day, 2);
  });

  it('concurrent senders never take more than the cap', async () => {
    const clock = new FakeClock(at(2, 23, 0));
    const { app, rt } = await warmingApp(clock);
    apps.push(app);
    const results = await Promise.all(Array.from({ length: 80 }, (_, i) => rt.admit({ jobId: `p${i}`, address: '127.0.0.2', provider: 'gmail', destination: 'gmail', now: clock.now() })));
    assert.equal(results.filter((r) => r.ok).length, 20);
    assert.equal((await warmup(app)).usage_today.by_provider.gmail, 20);
  });

  it('a restart in the middle of the day keeps the counts', async () => {
    const clock = new FakeClock(at(2, 23, 0));
    const first = await warmingApp(clock);
    assert.equal((await send(first.rt, clock, 30)).ok, 30);
    await first.app.close();
    const app = await createApp(testConfig(first.app.dataDir, { ips: OWN_IPS }), { clock, logStream: new Writable({ write: (_c, _e, cb) => cb() }) });
    try {
      const rt = ipRuntimeFor(app.deps);
      assert.equal((await send(rt, clock, 30)).ok, 20);
    } finally {
      await app.close();
      await first.app.stop().catch(() => undefined);
    }
  });

  it('uncapped (warm) IPs are counted too, written in batches', async () => {
    const clock = new FakeClock(at(2, 12, 0));
    const app = await startTestApp({ ips: IPS }, { clock });
    apps.push(app);
    const rt = ipRuntimeFor(app.deps);
    for (let i = 0; i < 7; i++) assert.equal((await rt.admit({ jobId: `w${i}`, address: '127.0.0.3', provider: 'yahoo', destination: 'yahoo', now: clock.now() })).ok, true);
    assert.equal(ipOf((await app.api.get('/v1/ip-pools/default')).body, '127.0.0.3').usage_today.by_provider.yahoo, 7, 'shown before the write');
    await app.workers.find((w) => w.name === 'pools')?.runOnce?.();
    assert.equal(Number((await app.db('ip_daily_usage').where({ address: '127.0.0.3', provider: 'yahoo' }).first()).sent), 7);
  });
});
