/*
 * Analytics and suppression benchmark.
 *
 *   node dist/bench/analytics.js [--messages 1000000] [--days 365] [--suppressions 1000000] [--runs 15] [--rebuild]
 *
 * 1. Seeds N messages over D days with their events (queued, sent, delivered or
 *    bounced, opens, clicks, complaints) straight into the database in batched
 *    prepared inserts, with the rollup rows the event sink would have written
 *    (same row sets, aggregated a few days at a time in memory). Reports seeding time.
 * 2. Checks one day's stats against a count over the events table.
 * 3. Times every analytics endpoint over HTTP (p50/p95 of --runs calls).
 * 4. Uploads a CSV of --suppressions rows (with duplicates and invalid rows)
 *    through POST /v1/suppressions/upload and reports time and peak RSS.
 * With --rebuild it also times `pigeon analytics rebuild` (SQL over every event).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { createApp, App } from '../src/app';
import type { Database, Statement } from 'sqlite3';
import { newId } from '../src/ids';
import { DAY, DOMAIN_GRAINS, HOUR, Deltas, RollupDims, TOTAL_GRAINS, floorTo, tagSets } from '../src/analytics/rollup';
import { DEFAULT_POOL } from '../src/pools/lookup';
import { rebuildRollups } from '../src/analytics/rebuild';

interface Options {
  messages: number;
  days: number;
  suppressions: number;
  runs: number;
  rebuild: boolean;
}

function options(argv: string[]): Options {
  const get = (name: string, fallback: number) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? Number(argv[i + 1]) : fallback;
  };
  return { messages: get('messages', 1_000_000), days: get('days', 365), suppressions: get('suppressions', 1_000_000), runs: get('runs', 15), rebuild: argv.includes('--rebuild') };
}

/** Deterministic PRNG so runs are comparable. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rnd = prng(42);

/** Recipient domains: a few big mailbox providers and a long tail, Zipf-like. */
const BIG = ['gmail.com', 'outlook.com', 'yahoo.com', 'hotmail.com', 'icloud.com', 'aol.com', 'gmx.de', 'web.de', 'proton.me', 'mail.ru'];
const DOMAINS = [...BIG, ...Array.from({ length: 1990 }, (_, i) => `company${i}.example`)];
const CUMULATIVE = (() => {
  let total = 0;
  const c = DOMAINS.map((_, i) => (total += 1 / (i + 1) ** 1.1));
  return c.map((x) => x / total);
})();
function recipientDomain(): string {
  const r = rnd();
  let lo = 0;
  let hi = CUMULATIVE.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (CUMULATIVE[mid] < r) lo = mid + 1;
    else hi = mid;
  }
  return DOMAINS[lo];
}
const SENDING = ['app.example', 'billing.example', 'news.example'];
const POOLS = [null, 'warm', 'bulk'];
const TAGS = ['welcome', 'receipt', 'reset', 'digest', 'alert', 'invoice'];
const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)];

/**
 * Bulk writer on the raw SQLite connection: one prepared multi-row INSERT per
 * table, reused for every full chunk (the query builder and re-parsing would
 * cost more than the inserts themselves).
 */
class BulkWriter {
  private statements = new Map<string, Statement>();
  private pending: Array<Promise<void>> = [];

  constructor(private readonly conn: Database) {}

  exec(sql: string): Promise<void> {
    return new Promise((resolve, reject) => this.conn.exec(sql, (err) => (err ? reject(err) : resolve())));
  }

  private statement(table: string, columns: string[], rows: number, upsert?: string[]): Statement {
    const id = `${table}|${rows}`;
    let st = this.statements.get(id);
    if (!st) {
      const tuple = `(${columns.map(() => '?').join(',')})`;
      let sql = `INSERT INTO ${table} (${columns.join(',')}) VALUES ${Array(rows).fill(tuple).join(',')}`;
      if (upsert) sql += ` ON CONFLICT (${upsert.join(',')}) DO UPDATE SET ${METRIC_COLUMNS.map((m) => `${m} = ${table}.${m} + excluded.${m}`).join(',')}`;
      st = this.conn.prepare(sql);
      this.statements.set(id, st);
    }
    return st;
  }

  /**
   * Queues the rows; sqlite3 runs statements in order on its own thread.
   * Chunks come in four fixed sizes so only four statements per table are ever prepared.
   */
  insert(table: string, columns: string[], rows: unknown[][], upsert?: string[]): void {
    const sizes = [Math.floor(30_000 / columns.length), 64, 8, 1];
    let i = 0;
    for (const size of sizes) {
      for (; rows.length - i >= size; i += size) {
        const chunk = rows.slice(i, i + size);
        const st = this.statement(table, columns, size, upsert);
        this.pending.push(new Promise((resolve, reject) => st.run(chunk.flat(), (err: Error | null) => (err ? reject(err) : resolve()))));
      }
    }
  }

  async drain(): Promise<void> {
    const all = this.pending;
    this.pending = [];
    await Promise.all(all);
  }

  async close(): Promise<void> {
    for (const st of this.statements.values()) await new Promise<void>((resolve) => st.finalize(() => resolve()));
  }
}

const METRIC_COLUMNS = ['sent', 'delivered', 'bounced_hard', 'bounced_soft', 'complained', 'opened_total', 'opened_unique', 'clicked_total', 'clicked_unique', 'suppressed', 'deferred'];
const METRIC_INDEX = new Map(METRIC_COLUMNS.map((m, i) => [m, i]));
const TOTAL_KEY = ['account_id', 'mode', 'tag', 'grain', 'bucket', 'sending_domain', 'ip_pool'];
const DOMAIN_KEY = ['account_id', 'mode', 'tag', 'grain', 'bucket', 'recipient_domain', 'sending_domain', 'ip_pool'];

/**
 * Rollup rows aggregated in memory per UTC day, written once no later event
 * can reach that day. The row set of each change is exactly the sink's
 * (tagSets, both grains, both tables); only the bookkeeping is compact here.
 */
class RollupBuffer {
  /** day start → table → key → [key values..., metric counts...] */
  private days = new Map<number, { totals: Map<string, unknown[]>; domains: Map<string, unknown[]> }>();
  rows = 0;

  add(dims: RollupDims, deltas: Deltas): void {
    const day = Math.floor(dims.at / DAY) * DAY;
    let part = this.days.get(day);
    if (!part) this.days.set(day, (part = { totals: new Map(), domains: new Map() }));
    const pool = dims.ipPool || DEFAULT_POOL;
    const buckets = { h: Math.floor(dims.at / HOUR) * HOUR, d: day, m: floorTo('m', dims.at) };
    for (const tag of tagSets(dims.tags)) {
      for (const grain of TOTAL_GRAINS) this.count(part.totals, [dims.accountId, dims.mode, tag, grain, buckets[grain], dims.sendingDomain, pool], deltas);
      for (const grain of DOMAIN_GRAINS) {
        this.count(part.domains, [dims.accountId, dims.mode, tag, grain, buckets[grain], dims.recipientDomain, dims.sendingDomain, pool], deltas);
      }
    }
  }

  private count(map: Map<string, unknown[]>, key: unknown[], deltas: Deltas): void {
    const k = key.join('|');
    let row = map.get(k);
    if (!row) map.set(k, (row = [...key, ...METRIC_COLUMNS.map(() => 0)]));
    for (const [m, v] of Object.entries(deltas)) (row[key.length + (METRIC_INDEX.get(m) as number)] as number) += v as number;
  }

  /** Queues every day before `before` for writing and forgets it. */
  flush(writer: BulkWriter, before: number): void {
    for (const [day, part] of this.days) {
      if (day >= before) continue;
      writer.insert('analytics_totals', [...TOTAL_KEY, ...METRIC_COLUMNS], [...part.totals.values()], TOTAL_KEY);
      writer.insert('analytics_domains', [...DOMAIN_KEY, ...METRIC_COLUMNS], [...part.domains.values()], DOMAIN_KEY);
      this.rows += part.totals.size + part.domains.size;
      this.days.delete(day);
    }
  }
}

interface SeedStats {
  messages: number;
  events: number;
  rollupRows: number;
  seconds: number;
  from: number;
  to: number;
}

async function seed(app: App, opts: Options): Promise<SeedStats> {
  const started = Date.now();
  const db = app.db;
  const accountId = (await db('accounts').first('id')).id as string;
  const contentId = newId('mc');
  const raw = Buffer.from('Subject: hello\r\n\r\nhello\r\n');
  await db('message_contents').insert({ id: contentId, raw, size: raw.length, signed: true, created_at: 0 });
  const end = Math.floor(Date.now() / DAY) * DAY;
  const start = end - opts.days * DAY;
  const buffer = new RollupBuffer();
  const conn = (await db.client.acquireConnection()) as Database;
  const writer = new BulkWriter(conn);
  let events = 0;
  let made = 0;
  // Seeding only: no fsync and a large page cache (the events indexes outgrow the default 2 MB).
  await writer.exec('PRAGMA synchronous = OFF; PRAGMA cache_size = -262144;');
  try {
    for (let day = 0; day < opts.days; day++) {
      const dayStart = start + day * DAY;
      const count = Math.round(((day + 1) * opts.messages) / opts.days) - made;
      const messages: unknown[][] = [];
      const evs: unknown[][] = [];
      for (let i = 0; i < count; i++) events += oneMessage(accountId, contentId, dayStart + Math.floor(rnd() * DAY), messages, evs, buffer);
      await writer.exec('BEGIN');
      writer.insert('messages', MESSAGE_COLUMNS, messages);
      writer.insert('events', ['id', 'account_id', 'mode', 'type', 'message_id', 'data', 'created_at'], evs);
      buffer.flush(writer, dayStart - 4 * DAY);
      await writer.drain();
      await writer.exec('COMMIT');
      made += count;
      if (day % 30 === 29) process.stderr.write(`  seeded ${made} messages, ${events} events (${((Date.now() - started) / 1000).toFixed(0)} s)\n`);
    }
    await writer.exec('BEGIN');
    buffer.flush(writer, Infinity);
    await writer.drain();
    await writer.exec('COMMIT');
    await writer.close();
  } finally {
    await writer.exec(`PRAGMA synchronous = ${app.config.database.synchronous}; PRAGMA cache_size = -2000;`);
    await db.client.releaseConnection(conn);
  }
  return { messages: made, events, rollupRows: buffer.rows, seconds: (Date.now() - started) / 1000, from: start, to: end + 4 * DAY };
}

const MESSAGE_COLUMNS = [
  'id', 'account_id', 'mode', 'status', 'batch_id', 'content_id', 'from_email', 'to_email', 'recipient_domain', 'sending_domain',
  'subject', 'tags', 'metadata', 'ip_pool', 'message_id_header', 'created_at', 'updated_at',
];

/** One message and its events; returns the number of events. */
function oneMessage(accountId: string, contentId: string, at: number, messages: unknown[][], evs: unknown[][], buffer: RollupBuffer): number {
  const id = newId('msg');
  const rd = recipientDomain();
  const sd = pick(SENDING);
  const to = `user${Math.floor(rnd() * 1e9)}@${rd}`;
  const from = `noreply@${sd}`;
  const tags = rnd() < 0.4 ? [] : rnd() < 0.8 ? [pick(TAGS)] : [pick(TAGS), pick(TAGS)];
  const pool = pick(POOLS);
  const outcome = rnd();
  const status = outcome < 0.05 ? 'bounced' : outcome < 0.08 ? 'deferred' : 'delivered';
  messages.push([id, accountId, 'live', status, id, contentId, from, to, rd, sd, 'Your receipt', JSON.stringify(tags), '{}', pool, `${id}@app.example`, at, at]);
  const dims: RollupDims = { accountId, mode: 'live', at, sendingDomain: sd, recipientDomain: rd, tags, ipPool: pool };
  let n = 0;
  const event = (type: string, when: number, fields: Record<string, unknown>, deltas?: Deltas) => {
    const data = { message_id: id, to, from, ...fields, ...(tags.length ? { tags } : {}) };
    evs.push([newId('evt'), accountId, 'live', type, id, JSON.stringify(data), when]);
    if (deltas) buffer.add({ ...dims, at: when }, deltas);
    n++;
  };
  event('message.queued', at, { queued_at: new Date(at).toISOString() });
  const sent = at + Math.floor(rnd() * 20_000);
  if (status === 'deferred') {
    buffer.add({ ...dims, at: sent }, { deferred: 1 });
    return n;
  }
  event('message.sent', sent, { sent_at: new Date(sent).toISOString() }, { sent: 1 });
  if (status === 'bounced') {
    const soft = rnd() < 0.3;
    event('message.bounced', sent + 500, { type: soft ? 'soft' : 'hard', code: 550, enhanced_code: '5.1.1', diagnostic: 'no such user' }, soft ? { bounced_soft: 1 } : { bounced_hard: 1 });
    return n;
  }
  event('message.delivered', sent + 400, { delivered_at: new Date(sent + 400).toISOString() }, { delivered: 1 });
  if (rnd() < 0.001) event('message.complained', sent + HOUR, { feedback_type: 'abuse' }, { complained: 1 });
  if (rnd() < 0.45) {
    for (let o = 0, opens = 1 + Math.floor(rnd() * 3); o < opens; o++) {
      const when = sent + Math.floor(rnd() * 72 * HOUR);
      event('message.opened', when, { user_agent: 'Mozilla/5.0', unique: o === 0, prefetched: false }, o === 0 ? { opened_total: 1, opened_unique: 1 } : { opened_total: 1 });
    }
    if (rnd() < 0.25) {
      for (let c = 0, clicks = 1 + Math.floor(rnd() * 2); c < clicks; c++) {
        const when = sent + Math.floor(rnd() * 72 * HOUR);
        event('message.clicked', when, { url: 'https://app.example/x', unique: c === 0 }, c === 0 ? { clicked_total: 1, clicked_unique: 1 } : { clicked_total: 1 });
      }
    }
  }
  return n;
}

async function timed(url: string, key: string, runs: number): Promise<{ p50: number; p95: number; bytes: number; status: number }> {
  const times: number[] = [];
  let bytes = 0;
  let status = 0;
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
    const body = await res.arrayBuffer();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    bytes = body.byteLength;
    status = res.status;
  }
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(times.length * 0.5)], p95: times[Math.min(times.length - 1, Math.floor(times.length * 0.95))], bytes, status };
}

async function endpoints(app: App, key: string, s: SeedStats, runs: number): Promise<void> {
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  const year = `from=${day(s.to - 365 * DAY)}&to=${day(s.to)}`;
  const week = `from=${day(s.to - 7 * DAY - 4 * DAY)}&to=${day(s.to - 4 * DAY)}`;
  const ragged = `from=${new Date(s.to - 200 * DAY + 5 * HOUR + 17 * 60_000).toISOString()}&to=${new Date(s.to - 20 * DAY - 3 * HOUR).toISOString()}`;
  const cases: Array<[string, string, number?]> = [
    ['stats, 7 days', `/v1/analytics/stats?${week}`],
    ['stats, 365 days', `/v1/analytics/stats?${year}`],
    ['stats, 180 days ragged hours', `/v1/analytics/stats?${ragged}`],
    ['stats, 365 days, tag filter', `/v1/analytics/stats?${year}&tag=receipt`],
    ['stats, 365 days, domain+pool', `/v1/analytics/stats?${year}&domain=billing.example&ip_pool=warm`],
    ['timeseries day, 365 days, UTC', `/v1/analytics/timeseries?${year}&interval=day`],
    ['timeseries day, 365 days, Europe/Berlin', `/v1/analytics/timeseries?${year}&interval=day&tz=Europe/Berlin`],
    ['timeseries week, 365 days, America/New_York', `/v1/analytics/timeseries?${year}&interval=week&tz=America/New_York`],
    ['timeseries hour, 7 days', `/v1/analytics/timeseries?${week}&interval=hour`],
    ['timeseries hour, 365 days', `/v1/analytics/timeseries?${year}&interval=hour`, Math.min(runs, 5)],
    ['breakdown/domains, 7 days', `/v1/analytics/breakdown/domains?${week}`],
    ['breakdown/domains, 365 days', `/v1/analytics/breakdown/domains?${year}`],
    ['breakdown/domains, 365 days, page 3', `/v1/analytics/breakdown/domains?${year}&cursor=COMPANY&limit=20`],
    ['breakdown/domains, 365 days, tag', `/v1/analytics/breakdown/domains?${year}&tag=welcome&limit=100`],
    ['export events json, 1 day', `/v1/analytics/export?from=${day(s.to - 30 * DAY)}&to=${day(s.to - 30 * DAY)}&format=json`, 3],
    ['export messages csv, 7 days', `/v1/analytics/export?${week}&kind=messages`, 3],
  ];
  // The cursor for "page 3" is the 40th domain of the first pages.
  const first = await (await fetch(`${app.http.url}/v1/analytics/breakdown/domains?${year}&limit=40`, { headers: { authorization: `Bearer ${key}` } })).json() as { data: Array<{ recipient_domain: string }> };
  const cursor = first.data[39]?.recipient_domain ?? '';
  console.log('\n| endpoint | p50 ms | p95 ms | response bytes |\n|---|---:|---:|---:|');
  for (const [name, url, n] of cases) {
    const r = await timed(app.http.url + url.replace('COMPANY', cursor), key, n ?? runs);
    if (r.status !== 200) throw new Error(`${name}: HTTP ${r.status}`);
    console.log(`| ${name} | ${r.p50.toFixed(1)} | ${r.p95.toFixed(1)} | ${r.bytes} |`);
  }
}

/** Checks one day of the rollups against the events table. */
async function check(app: App, key: string, s: SeedStats): Promise<void> {
  const dayStart = Math.floor((s.from + s.to) / 2 / DAY) * DAY;
  const counted = await app.db('events').where({ type: 'message.sent', mode: 'live' }).andWhere('created_at', '>=', dayStart).andWhere('created_at', '<', dayStart + DAY).count({ n: '*' }).first();
  const d = new Date(dayStart).toISOString().slice(0, 10);
  const res = await (await fetch(`${app.http.url}/v1/analytics/stats?from=${d}&to=${d}`, { headers: { authorization: `Bearer ${key}` } })).json() as { metrics: { sent: number } };
  const ok = Number(counted?.n) === res.metrics.sent;
  console.log(`check ${d}: events table says ${counted?.n} sent, /stats says ${res.metrics.sent} → ${ok ? 'equal' : 'DIFFERENT'}`);
  if (!ok) process.exitCode = 1;
}

async function suppressionUpload(app: App, key: string, rows: number, dir: string): Promise<void> {
  const file = path.join(dir, 'suppressions.csv');
  const out = fs.createWriteStream(file);
  out.write('email,reason\n');
  for (let i = 0; i < rows; i++) {
    const line = i % 1000 === 7 ? `not-an-address-${i},\n` : i % 500 === 3 ? `User${i - 1}@Example.com,\n` : `user${i}@example.com,${i % 10 === 0 ? 'complaint' : ''}\n`;
    if (!out.write(line)) await new Promise<void>((r) => out.once("drain", () => r()));
  }
  await new Promise((r) => out.end(r));
  const size = fs.statSync(file).size;
  global.gc?.();
  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  const body = new FormData();
  body.append('file', await fs.openAsBlob(file, { type: 'text/csv' }), 'suppressions.csv');
  body.append('reason', 'imported');
  const t0 = Date.now();
  const res = await fetch(`${app.http.url}/v1/suppressions/upload`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body });
  const result = await res.json();
  const seconds = (Date.now() - t0) / 1000;
  clearInterval(sampler);
  const r = result as { received: number; added: number; duplicates: number; invalid_count: number };
  console.log(`\nsuppression upload: ${rows} rows, ${(size / 1e6).toFixed(1)} MB → HTTP ${res.status} in ${seconds.toFixed(1)} s ` +
    `(${Math.round(rows / seconds)} rows/s); received ${r.received}, added ${r.added}, duplicates ${r.duplicates}, invalid ${r.invalid_count}`);
  console.log(`RSS: ${(baseline / 2 ** 20).toFixed(0)} MiB before, peak ${(peak / 2 ** 20).toFixed(0)} MiB during (+${((peak - baseline) / 2 ** 20).toFixed(0)} MiB; server and client in one process)`);
}

async function main(): Promise<void> {
  const opts = options(process.argv.slice(2));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-bench-'));
  const sink = new Writable({ write: (_c, _e, cb) => cb() });
  const app = await createApp({
    dataDir: dir, log: { level: 'warn' }, http: { port: 0 }, smtp: { submission: { port: 0 }, inbound: { port: 0 } },
    database: { synchronous: 'NORMAL' }, rateLimit: { requestsPerSecond: 1e6, burst: 1e6 }, suppressions: { uploadMaxBytes: 512 * 2 ** 20 },
  }, { logStream: sink });
  try {
    const key = app.bootstrapKey as string;
    const liveKey = (await fetch(`${app.http.url}/v1/api-keys`, {
      method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bench', mode: 'live', scopes: ['analytics:read'] }),
    }).then((r) => r.json()) as { key: string }).key;
    // Seeding holds the one database connection; background workers would time out waiting for it.
    await Promise.all(app.workers.map((w) => w.stop()));
    console.log(`seeding ${opts.messages} messages over ${opts.days} days (node ${process.version}, ${os.cpus().length} cores)…`);
    const s = await seed(app, opts);
    const dbFile = path.join(dir, 'pigeon.sqlite');
    console.log(`seeded ${s.messages} messages, ${s.events} events, ${s.rollupRows} rollup rows in ${s.seconds.toFixed(1)} s ` +
      `(${Math.round((s.messages + s.events) / s.seconds)} rows/s); database ${(fs.statSync(dbFile).size / 2 ** 20).toFixed(0)} MiB`);
    await check(app, liveKey, s);
    await endpoints(app, liveKey, s, opts.runs);
    if (opts.rebuild) {
      const t0 = Date.now();
      await rebuildRollups(app.db);
      console.log(`\nanalytics rebuild (all rollups from ${s.events} events): ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      await check(app, liveKey, s);
    }
    if (opts.suppressions > 0) await suppressionUpload(app, key, opts.suppressions, dir);
  } finally {
    await app.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
