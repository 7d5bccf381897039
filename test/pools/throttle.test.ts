// A throttling reply cools an IP down toward that provider: lower rate, fewer in flight, visible in GET and /metrics.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../src/clock';
import { ipRuntimeFor, type IpRuntime } from '../../src/pools/runtime';
import { scrapeMetrics, startTestApp, type TestApp } from '../support/app';
import { ipOf, IPS } from './helpers';

const GMAIL_421 = '421-4.7.28 [127.0.0.2] Our system has detected an unusual rate of unsolicited mail originating from your IP address.';

describe('throttling', () => {
  let app: TestApp;
  let rt: IpRuntime;
  const clock = new FakeClock(Date.UTC(2026, 2, 2, 12, 0));
  let n = 0;
  const admit = (destination = 'gmail', address = '127.0.0.2') =>
    rt.admit({ jobId: `t${++n}`, address, provider: destination.startsWith('domain:') ? null : destination, destination, now: clock.now() });
  const settle = (id: string, response = '250 ok') =>
    rt.settle(id, { kind: response.startsWith('2') ? 'delivered' : 'deferred', code: Number(response.slice(0, 3)), enhancedCode: /^\d{3}[ -](\d\.\d+\.\d+)/.exec(response)?.[1] ?? null, response });

  before(async () => {
    app = await startTestApp({ ips: IPS, pools: { throttle: { messagesPerMinute: 20, cooldownMinutes: 30, connections: 1 } } }, { clock });
    rt = ipRuntimeFor(app.deps);
  });
  after(() => app.stop());

  it('a warm IP sends to a provider freely until a throttling reply arrives', async () => {
    for (let i = 0; i < 5; i++) assert.equal((await admit()).ok, true);
    for (let i = 1; i <= 5; i++) await settle(`t${i}`);
    assert.equal((await admit()).ok, true);
    await settle(`t${n}`, GMAIL_421);
    const row = await app.db('ip_throttles').where({ address: '127.0.0.2', destination: 'gmail' }).first();
    assert.deepEqual([row.level, row.reason, Number(row.until)], [1, 'rate_limited', clock.now() + 30 * 60_000]);
  });

  it('during the cool-down the IP sends to that provider at the lowered rate, one at a time', async () => {
    const refused = await admit();
    assert.deepEqual(refused, { ok: false, retryAt: clock.now() + 3_000, limit: 'throttled' }, '20 a minute: one every 3 s');
    clock.advance(3_000);
    const id = `t${n + 1}`;
    assert.equal((await admit()).ok, true);
    clock.advance(10_000);
    assert.equal((await admit()).ok, false, 'one message in flight is the limit');
    await settle(id);
    assert.equal((await admit()).ok, true);
    await settle(`t${n}`);
  });

  it('other providers, and the other IP, are not slowed', async () => {
    const yahoo = await admit('yahoo');
    assert.equal(yahoo.ok, true);
    await settle(`t${n}`);
    assert.equal((await admit('gmail', '127.0.0.3')).ok, true);
    await settle(`t${n}`);
  });

  it('the cool-down shows in GET /v1/ip-pools and in /metrics', async () => {
    const ip = ipOf((await app.api.get('/v1/ip-pools')).body.data[0], '127.0.0.2');
    assert.equal(ip.throttles.length, 1);
    const t = ip.throttles[0];
    assert.deepEqual([t.destination, t.reason, t.level, t.rate_per_minute, t.max_in_flight, t.replies], ['gmail', 'rate_limited', 1, 20, 1, 1]);
    assert.equal(t.last_reply, GMAIL_421);
    const metrics = await scrapeMetrics(app);
    assert.match(metrics, /pigeon_ip_throttle_level\{address="127\.0\.0\.2",destination="gmail",reason="rate_limited"\} 1/);
    assert.match(metrics, /pigeon_ip_throttle_rate_per_minute\{address="127\.0\.0\.2",destination="gmail"\} 20/);
    assert.match(metrics, /pigeon_ip_throttle_replies_total\{address="127\.0\.0\.2",destination="gmail",reason="rate_limited"\} 1/);
  });

  it('another throttling reply during the cool-down halves the rate again and extends it; parallel replies count once', async () => {
    clock.advance(120_000);
    const a = await admit();
    assert.equal(a.ok, true);
    await settle(`t${n}`, GMAIL_421);
    clock.advance(3_000);
    let row = await app.db('ip_throttles').where({ address: '127.0.0.2', destination: 'gmail' }).first();
    assert.deepEqual([row.level, Number(row.until), row.hits], [2, clock.now() - 3_000 + 60 * 60_000, 2]);
    await rt.admit({ jobId: 'x1', address: '127.0.0.2', provider: 'gmail', destination: 'gmail', now: clock.now() + 6_000 });
    await settle('x1', GMAIL_421);
    row = await app.db('ip_throttles').where({ address: '127.0.0.2', destination: 'gmail' }).first();
    assert.equal(row.level, 2, 'a reply within a minute of the last does not escalate');
    const refused = await admit();
    assert.equal(refused.ok, false);
  });

  it('greylisting and ordinary deferrals do not throttle', async () => {
    assert.equal((await admit('domain:grey.test')).ok, true);
    await settle(`t${n}`, '451 4.7.1 Greylisted, please try again later');
    assert.equal((await admit('domain:grey.test')).ok, true);
    await settle(`t${n}`, '452 4.2.2 mailbox full');
    assert.equal(await app.db('ip_throttles').where({ destination: 'domain:grey.test' }).first(), undefined);
  });

  it('when the cool-down ends the IP sends at full speed again', async () => {
    clock.advance(2 * 3_600_000);
    for (let i = 0; i < 3; i++) assert.equal((await admit()).ok, true);
    const ip = ipOf((await app.api.get('/v1/ip-pools/default')).body, '127.0.0.2');
    assert.deepEqual(ip.throttles, []);
  });
});
