// Starting, pausing, resuming and stopping warm-up through the API (addresses dedicated to the account, a live key),
// and how its state shows in GET.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../src/clock';
import { startTestApp, type ApiClient, type TestApp } from '../support/app';
import { ipOf, IPS, liveClient, type PoolBody } from './helpers';

describe('IP warm-up API', () => {
  let app: TestApp;
  let api: ApiClient;
  // 10:30 UTC: the hourly spreading allows 11/24 of the day's cap by 11:00
  const clock = new FakeClock(Date.UTC(2026, 2, 2, 10, 30));

  before(async () => {
    // every address is dedicated to the default account, so its live keys manage their warm-up
    const ips = [...IPS, { address: '127.0.0.4', hostname: 'out4.pigeon.test' }].map((ip) => ({ ...ip, account: 'default' }));
    app = await startTestApp({ ips }, { clock });
    api = await liveClient(app);
    for (const [name, ips] of [['warming', ['127.0.0.2', '127.0.0.3']], ['warm', ['127.0.0.4']], ['also', ['127.0.0.2']]] as const) {
      assert.equal((await api.post('/v1/ip-pools', { name, ips })).status, 201);
    }
  });
  after(() => app.stop());

  it('starting the standard schedule caps every IP of the pool at day 1 of 30: 50 a day, spread over the hours, shared per provider', async () => {
    const res = await api.post('/v1/ip-pools/warming/warmup', {});
    assert.equal(res.status, 200, res.text);
    const pool = res.body as PoolBody;
    for (const ip of pool.ips) {
      assert.deepEqual(
        { ...ip.warmup, started_at: undefined },
        {
          status: 'warming', schedule: 'standard', day: 1, days: 30, today_cap: 50, allowed_by_now: Math.floor((50 * 11) / 24),
          provider_caps: { gmail: 20, microsoft: 15, yahoo: 10, apple: 5 },
          started_at: undefined, paused_at: null, finished_at: null, finished_reason: null,
        },
      );
      assert.equal(ip.warmup.started_at, new Date(clock.now()).toISOString());
    }
    assert.equal(pool.overflow, 'queue');
  });

  it('warm-up belongs to the IP: every pool (and the default pool) that has it shows the same state', async () => {
    const also = (await api.get('/v1/ip-pools/also')).body as PoolBody;
    assert.equal(ipOf(also, '127.0.0.2').warmup.status, 'warming');
    const dflt = (await api.get('/v1/ip-pools/default')).body as PoolBody;
    assert.equal(ipOf(dflt, '127.0.0.3').warmup.day, 1);
    assert.equal(ipOf(dflt, '127.0.0.4').warmup.status, 'warm');
  });

  it('a custom schedule for some IPs, with an overflow pool; starting again keeps the day and takes the new schedule', async () => {
    const res = await api.post('/v1/ip-pools/warm/warmup', { ips: ['127.0.0.4'], schedule: [10, 20, 40], overflow: 'also' });
    assert.equal(res.status, 200, res.text);
    const ip = ipOf(res.body, '127.0.0.4');
    assert.deepEqual([ip.warmup.schedule, ip.warmup.day, ip.warmup.days, ip.warmup.today_cap], ['custom', 1, 3, 10]);
    assert.equal(res.body.overflow, 'also');
    await app.db('ip_warmups').where({ address: '127.0.0.4' }).update({ day_index: 2, day_date: '2026-03-02' });
    const again = await api.post('/v1/ip-pools/warm/warmup', { schedule: [5, 6, 7, 8] });
    assert.deepEqual([ipOf(again.body, '127.0.0.4').warmup.day, ipOf(again.body, '127.0.0.4').warmup.today_cap], [3, 7]);
    assert.equal(again.body.overflow, 'also', 'overflow stays unless given');
  });

  it('bad warm-up requests are 422 and change nothing', async () => {
    const before = await app.db('ip_warmups').orderBy('address');
    const cases: Array<[unknown, string, string]> = [
      [{ ips: ['127.0.0.4'] }, 'not_in_pool', 'ips[0]'],
      [{ ips: ['127.0.0.2', '10.1.1.1'] }, 'unknown_ip', 'ips[1]'],
      [{ schedule: [] }, 'validation_failed', 'schedule'],
      [{ schedule: [50, 0] }, 'validation_failed', 'schedule'],
      [{ schedule: 'fast' }, 'validation_failed', 'schedule'],
      [{ overflow: 'nowhere' }, 'unknown_pool', 'overflow'],
      [{ overflow: 'warming' }, 'invalid_overflow', 'overflow'],
      [{ speed: 2 }, 'validation_failed', 'speed'],
    ];
    for (const [body, code, param] of cases) {
      const res = await api.post('/v1/ip-pools/warming/warmup', body);
      assert.equal(res.status, 422, JSON.stringify(body));
      assert.equal(res.body.error.code, code, JSON.stringify(body));
      assert.ok(res.body.error.param.startsWith(param), `${JSON.stringify(body)} → ${res.body.error.param}`);
    }
    assert.equal((await api.post('/v1/ip-pools/nope/warmup', {})).status, 404);
    assert.deepEqual(await app.db('ip_warmups').orderBy('address'), before);
  });

  it('pause holds an IP at its day (still capped), resume lets days advance again, stop makes it warm', async () => {
    const paused = await api.post('/v1/ip-pools/warming/warmup/pause', { ips: ['127.0.0.3'] });
    assert.equal(paused.status, 200, paused.text);
    assert.deepEqual([ipOf(paused.body, '127.0.0.3').warmup.status, ipOf(paused.body, '127.0.0.3').warmup.today_cap], ['paused', 50]);
    assert.equal(ipOf(paused.body, '127.0.0.3').warmup.paused_at, new Date(clock.now()).toISOString());
    assert.equal(ipOf(paused.body, '127.0.0.2').warmup.status, 'warming');
    const resumed = await api.post('/v1/ip-pools/warming/warmup/resume', {});
    assert.deepEqual(resumed.body.ips.map((i: { warmup: { status: string } }) => i.warmup.status), ['warming', 'warming']);
    const stopped = await api.post('/v1/ip-pools/warming/warmup/stop', { ips: ['127.0.0.2'] });
    const w = ipOf(stopped.body, '127.0.0.2').warmup;
    assert.deepEqual([w.status, w.today_cap, w.finished_reason, w.schedule], ['warm', null, 'stopped', 'standard']);
    const notWarming = await api.post('/v1/ip-pools/warming/warmup/pause', { ips: ['127.0.0.2'] });
    assert.deepEqual([notWarming.status, notWarming.body.error.code, notWarming.body.error.param], [409, 'not_warming', 'ips[0]']);
    await api.post('/v1/ip-pools/warming/warmup/stop', {});
    assert.equal((await api.post('/v1/ip-pools/warming/warmup/resume', {})).body.error.code, 'not_warming');
  });

  it('starting warm-up again on a warm IP starts over at day 1', async () => {
    const res = await api.post('/v1/ip-pools/warming/warmup', { ips: ['127.0.0.2'] });
    assert.deepEqual([ipOf(res.body, '127.0.0.2').warmup.status, ipOf(res.body, '127.0.0.2').warmup.day, ipOf(res.body, '127.0.0.2').warmup.finished_at], ['warming', 1, null]);
  });
});
