/*
 * Property-style check of every analytics endpoint: a random (seeded) data set
 * of sends and outcomes is recorded through recordEvent, then each endpoint,
 * for many filters, ranges, zones and intervals, must equal counts computed
 * directly from the events table. Replay a failure with PIGEON_SEED=<seed>.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse as parseCsv } from 'csv-parse/sync';
import { FakeClock } from '../../src/clock';
import { DAY, HOUR, METRICS, Metric, RollupDims, rollupCounter } from '../../src/analytics/rollup';
import { rebuildRollups } from '../../src/analytics/rebuild';
import { createKey, startTestApp, TestApp, ApiClient } from '../support/app';
import { defaultAccountId, insertMessage, prng, recordMessageEvent, SeededMessage } from './fixtures';

const SEED = Number(process.env.PIGEON_SEED ?? 20261121);
const START = Date.UTC(2026, 2, 1);
const SENDING = ['a.example', 'b.example', 'c.example'];
const RECIPIENT = ['gmail.com', 'outlook.com', 'yahoo.com', 'example.org', 'corp.test', 'tiny.test'];
const TAGS = ['welcome', 'receipt', 'reset'];
const POOLS = [null, 'warm', 'bulk'];

interface Fact {
  at: number;
  mode: string;
  sendingDomain: string;
  recipientDomain: string;
  pool: string;
  tags: string[];
  metrics: Metric[];
}
type Filter = { domain?: string; tag?: string; ip_pool?: string };
type Counts = Record<Metric, number>;

async function generate(app: TestApp): Promise<Fact[]> {
  const rnd = prng(SEED);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)];
  const accountId = await defaultAccountId(app.db);
  const counted: Fact[] = [];
  for (let i = 0; i < 200; i++) {
    const tags = rnd() < 0.3 ? [] : rnd() < 0.8 ? [pick(TAGS)] : [pick(TAGS), pick(TAGS)]; // may repeat a tag
    const createdAt = START + Math.floor(rnd() * 30 * DAY);
    const m = await insertMessage(app.db, {
      accountId, mode: rnd() < 0.7 ? 'test' : 'live', createdAt, tags, ipPool: pick(POOLS),
      toEmail: `user${i}@${pick(RECIPIENT)}`, fromEmail: `app@${pick(SENDING)}`,
    });
    await recordMessageEvent(app.db, m, 'message.queued', createdAt);
    await outcomes(app, m, createdAt, rnd, counted);
  }
  return counted;
}

/** Random outcomes of one message; deferrals and suppressions go through rollupCounter and are remembered here. */
async function outcomes(app: TestApp, m: SeededMessage, t0: number, rnd: () => number, counted: Fact[]): Promise<void> {
  const later = (maxHours: number) => t0 + Math.floor(rnd() * maxHours * HOUR);
  const counter = async (metric: Metric, at: number) => {
    const dims: RollupDims = { accountId: m.accountId, mode: m.mode, at, sendingDomain: m.sendingDomain, recipientDomain: m.recipientDomain, tags: m.tags, ipPool: m.ipPool };
    await app.db.transaction((trx) => rollupCounter(trx, dims, metric));
    counted.push({ at, mode: m.mode, sendingDomain: m.sendingDomain, recipientDomain: m.recipientDomain, pool: m.ipPool ?? 'default', tags: m.tags, metrics: [metric] });
  };
  if (rnd() < 0.1) return counter('suppressed', t0);
  for (let d = Math.floor(rnd() * 3); d > 0; d--) await counter('deferred', later(2));
  if (rnd() < 0.1) return;
  await recordMessageEvent(app.db, m, 'message.sent', later(3));
  const r = rnd();
  if (r < 0.12) {
    await recordMessageEvent(app.db, m, 'message.bounced', later(6), { type: rnd() < 0.5 ? 'hard' : 'soft' });
    return;
  }
  if (r > 0.9) return;
  await recordMessageEvent(app.db, m, 'message.delivered', later(4));
  if (rnd() < 0.05) await recordMessageEvent(app.db, m, 'message.complained', later(48));
  for (let o = Math.floor(rnd() * 4); o > 0; o--) await recordMessageEvent(app.db, m, 'message.opened', later(72), { unique: false });
  for (let c = Math.floor(rnd() * 3); c > 0; c--) await recordMessageEvent(app.db, m, 'message.clicked', later(72), { url: `https://x.example/${c}` });
}

const EVENT_METRIC: Record<string, Metric> = {
  'message.sent': 'sent', 'message.delivered': 'delivered', 'message.complained': 'complained', 'message.opened': 'opened_total', 'message.clicked': 'clicked_total',
};

/** The ground truth: every event from the table, with the metrics it stands for. */
async function factsFromEvents(app: TestApp): Promise<Fact[]> {
  const rows = await app.db('events as e').join('messages as m', 'm.id', 'e.message_id')
    .select('e.id', 'e.type', 'e.created_at', 'e.mode', 'e.message_id', 'e.data', 'm.sending_domain', 'm.recipient_domain', 'm.ip_pool', 'm.tags')
    .orderBy('e.id');
  const seen = new Set<string>();
  return rows.map((r) => {
    const metrics: Metric[] = [];
    if (r.type === 'message.bounced') metrics.push(JSON.parse(r.data).type === 'soft' ? 'bounced_soft' : 'bounced_hard');
    else if (EVENT_METRIC[r.type]) metrics.push(EVENT_METRIC[r.type]);
    const key = `${r.message_id}|${r.type}`;
    if ((r.type === 'message.opened' || r.type === 'message.clicked') && !seen.has(key)) metrics.push(r.type === 'message.opened' ? 'opened_unique' : 'clicked_unique');
    seen.add(key);
    return { at: Number(r.created_at), mode: r.mode, sendingDomain: r.sending_domain, recipientDomain: r.recipient_domain, pool: r.ip_pool ?? 'default', tags: JSON.parse(r.tags), metrics };
  });
}

const zero = (): Counts => Object.fromEntries(METRICS.map((m) => [m, 0])) as Counts;

function matching(facts: Fact[], mode: string, f: Filter, from: number, to: number): Fact[] {
  return facts.filter((x) => x.mode === mode && x.at >= from && x.at < to && (!f.domain || x.sendingDomain === f.domain) &&
    (!f.tag || x.tags.includes(f.tag)) && (!f.ip_pool || x.pool === f.ip_pool));
}

function sum(facts: Fact[]): Counts {
  const c = zero();
  for (const x of facts) for (const m of x.metrics) c[m]++;
  return c;
}

const qs = (o: Record<string, string | number | undefined>) =>
  new URLSearchParams(Object.entries(o).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)] as [string, string])).toString();

const FILTERS: Filter[] = [{}, { domain: 'a.example' }, { tag: 'welcome' }, { ip_pool: 'default' }, { ip_pool: 'warm', tag: 'receipt' }, { domain: 'b.example', ip_pool: 'bulk' }];
const RANGES = [
  { from: '2026-02-25', to: '2026-04-10', expectFrom: '2026-02-25T00:00:00.000Z', expectTo: '2026-04-11T00:00:00.000Z' },
  { from: '2026-03-03T05:17:00Z', to: '2026-03-17T12:01:00Z', expectFrom: '2026-03-03T05:00:00.000Z', expectTo: '2026-03-17T13:00:00.000Z' },
  { from: '2026-03-10T10:00:00+01:00', to: '2026-03-10T18:00:00+01:00', expectFrom: '2026-03-10T09:00:00.000Z', expectTo: '2026-03-10T17:00:00.000Z' },
];

/** Local calendar date (YYYY-MM-DD) of an instant in a zone, by Intl (independent of the code under test). */
function localDate(ms: number, tz: string): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date(ms));
}
function mondayOf(date: string): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() - ((d.getUTCDay() + 6) % 7));
  return d.toISOString().slice(0, 10);
}

test('analytics endpoints equal counts computed from the events table (seeded random sends and outcomes)', async (t) => {
  const app = await startTestApp({ database: { synchronous: 'NORMAL' } }, { clock: new FakeClock(Date.UTC(2026, 3, 20)) });
  try {
    const counted = await generate(app);
    const facts = [...(await factsFromEvents(app)), ...counted];
    const clients: Record<string, ApiClient> = { test: app.api, live: app.api.withKey(await createKey(app, 'live', ['analytics:read'])) };

    await t.test('stats for every filter, range and mode', async () => {
      for (const [mode, api] of Object.entries(clients)) {
        for (const range of RANGES) {
          for (const f of FILTERS) {
            const res = await api.get(`/v1/analytics/stats?${qs({ from: range.from, to: range.to, ...f })}`);
            assert.equal(res.status, 200, res.text);
            assert.equal(res.body.from, range.expectFrom);
            assert.equal(res.body.to, range.expectTo);
            const expected = sum(matching(facts, mode, f, Date.parse(range.expectFrom), Date.parse(range.expectTo)));
            assert.deepEqual(res.body.metrics, expected, `${mode} ${JSON.stringify(range)} ${JSON.stringify(f)} (seed ${SEED})`);
          }
        }
      }
      const all = sum(matching(facts, 'test', {}, 0, Infinity));
      assert.ok(all.sent > 50 && all.opened_unique > 10 && all.clicked_unique > 5 && all.deferred > 5 && all.suppressed > 3, 'the data set exercises every metric');
    });

    await t.test('timeseries in several zones and intervals', async () => {
      for (const tz of ['UTC', 'America/New_York', 'Europe/Berlin', 'Asia/Kolkata']) {
        for (const interval of ['hour', 'day', 'week'] as const) {
          for (const f of [{}, { tag: 'welcome' }] as Filter[]) {
            const res = await app.api.get(`/v1/analytics/timeseries?${qs({ from: '2026-03-01', to: '2026-03-31', tz, interval, ...f })}`);
            assert.equal(res.status, 200, res.text);
            checkSeries(res.body, facts, tz, interval, f);
          }
        }
      }
    });

    await t.test('breakdown by recipient domain, every page', async () => {
      for (const range of RANGES.slice(0, 2)) {
        for (const f of [{}, { tag: 'receipt' }, { domain: 'c.example' }] as Filter[]) {
          const got: Array<{ recipient_domain: string; metrics: Counts }> = [];
          let cursor: string | undefined;
          const expected = expectedDomains(matching(facts, 'test', f, Date.parse(range.expectFrom), Date.parse(range.expectTo)));
          do {
            const res = await app.api.get(`/v1/analytics/breakdown/domains?${qs({ from: range.from, to: range.to, limit: 2, cursor, ...f })}`);
            assert.equal(res.status, 200, res.text);
            assert.equal(res.body.pagination.total, expected.length);
            got.push(...res.body.data);
            cursor = res.body.pagination.next_cursor ?? undefined;
          } while (cursor);
          assert.deepEqual(got.map((d) => [d.recipient_domain, d.metrics]), expected, JSON.stringify(f));
        }
      }
    });

    await t.test('rebuilding the rollups from the events gives the same table', async () => {
      const snapshot = () => app.db('analytics_rollups').orderBy(['account_id', 'mode', 'tag', 'grain', 'recipient_domain', 'bucket', 'sending_domain', 'ip_pool']);
      const before = await snapshot();
      await rebuildRollups(app.db);
      assert.deepEqual(await snapshot(), before);
      const account = await app.db('accounts').first('id');
      await rebuildRollups(app.db, account.id); // `--account`: one account's rows only
      assert.deepEqual(await snapshot(), before);
    });

    await t.test('export round-trips: JSON and CSV hold the same events as the table', async () => {
      await checkExport(app);
    });
  } finally {
    await app.stop();
  }
});

function checkSeries(body: any, facts: Fact[], tz: string, interval: 'hour' | 'day' | 'week', f: Filter): void {
  const from = Date.parse(body.from);
  const to = Date.parse(body.to);
  const buckets: Array<{ start: string; end: string; metrics: Counts }> = body.data;
  for (let i = 1; i < buckets.length; i++) assert.equal(Date.parse(buckets[i - 1].end), Date.parse(buckets[i].start), 'buckets are contiguous');
  const keyOf = (ms: number): string => {
    const hour = Math.floor(ms / HOUR) * HOUR;
    if (interval === 'hour') return String(hour);
    return interval === 'day' ? localDate(hour, tz) : mondayOf(localDate(hour, tz));
  };
  const bucketKey = (b: { start: string }) => (interval === 'hour' ? String(Date.parse(b.start)) : b.start.slice(0, 10));
  const expected = new Map<string, Counts>();
  for (const x of matching(facts, 'test', f, from, to)) {
    const c = expected.get(keyOf(x.at)) ?? zero();
    for (const m of x.metrics) c[m]++;
    expected.set(keyOf(x.at), c);
  }
  const keys = buckets.map(bucketKey);
  assert.equal(new Set(keys).size, keys.length, 'one bucket per key');
  for (const k of expected.keys()) assert.ok(keys.includes(k), `${tz} ${interval}: bucket ${k} exists`);
  for (const b of buckets) assert.deepEqual(b.metrics, expected.get(bucketKey(b)) ?? zero(), `${tz} ${interval} ${b.start} ${JSON.stringify(f)}`);
  if (interval === 'day') assert.equal(buckets.length, 31, `${tz}: March has 31 day buckets`);
  if (interval === 'day') assert.equal(buckets[0].start.slice(0, 10), '2026-03-01');
  if (interval === 'hour' && tz === 'America/New_York') assert.equal(buckets.length, 31 * 24 - 1, 'the spring-forward day has 23 hours');
}

function expectedDomains(facts: Fact[]): Array<[string, Counts]> {
  const by = new Map<string, Counts>();
  for (const x of facts) {
    const c = by.get(x.recipientDomain) ?? zero();
    for (const m of x.metrics) c[m]++;
    by.set(x.recipientDomain, c);
  }
  return [...by.entries()].sort((a, b) => b[1].sent - a[1].sent || (a[0] < b[0] ? -1 : 1));
}

async function checkExport(app: TestApp): Promise<void> {
  for (const f of [{}, { tag: 'welcome', ip_pool: 'warm' }, { domain: 'a.example' }] as Filter[]) {
    const range = { from: '2026-03-03T05:17:00Z', to: '2026-03-17T12:01:00Z' };
    const q = app.db('events as e').leftJoin('messages as m', 'm.id', 'e.message_id')
      .where({ 'e.mode': 'test' }).andWhere('e.created_at', '>=', Date.parse('2026-03-03T05:00:00Z')).andWhere('e.created_at', '<', Date.parse('2026-03-17T13:00:00Z'))
      .select('e.id', 'm.tags', 'm.sending_domain', 'm.ip_pool');
    const rows = (await q).filter((r) => (!f.tag || JSON.parse(r.tags).includes(f.tag)) && (!f.domain || r.sending_domain === f.domain) &&
      (!f.ip_pool || (r.ip_pool ?? 'default') === f.ip_pool));
    const json = await app.api.get(`/v1/analytics/export?${qs({ ...range, ...f, format: 'json', kind: 'events' })}`);
    assert.equal(json.status, 200);
    assert.match(json.headers.get('content-type') ?? '', /application\/json/);
    const items: Array<Record<string, unknown>> = json.body;
    assert.deepEqual(items.map((i) => i.id).sort(), rows.map((r) => r.id).sort(), JSON.stringify(f));
    const csv = await app.api.get(`/v1/analytics/export?${qs({ ...range, ...f, format: 'csv', kind: 'events' })}`);
    assert.equal(csv.status, 200);
    assert.match(csv.headers.get('content-disposition') ?? '', /attachment; filename="pigeon-events-/);
    const [header, ...records] = parseCsv(csv.text) as string[][];
    assert.deepEqual(header, Object.keys(items[0] ?? Object.fromEntries(header.map((h) => [h, 1]))));
    assert.equal(records.length, items.length);
    const structured = new Set(['tags', 'data']);
    records.forEach((rec, i) => {
      const fromCsv = Object.fromEntries(header.map((h, j) => {
        const cell = rec[j].replace(/^'(?=[=+\-@\t\r])/, '');
        return [h, structured.has(h) ? JSON.parse(cell) : cell === '' ? null : cell];
      }));
      assert.deepEqual(fromCsv, items[i]);
    });
  }
  const messages = await app.api.get(`/v1/analytics/export?${qs({ from: '2026-03-05', to: '2026-03-06', format: 'json', kind: 'messages', tag: 'reset' })}`);
  const expected = (await app.db('messages').where({ mode: 'test' }).andWhere('created_at', '>=', Date.UTC(2026, 2, 5)).andWhere('created_at', '<', Date.UTC(2026, 2, 7)))
    .filter((m) => JSON.parse(m.tags).includes('reset')).map((m) => m.id).sort();
  assert.deepEqual(messages.body.map((m: { id: string }) => m.id).sort(), expected);
}
