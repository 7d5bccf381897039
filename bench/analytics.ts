/*
 * Analytics and suppression benchmark.
 *
 *   node dist/bench/run.js analytics [--messages 1000000] [--days 365] [--suppressions 1000000] [--runs 15] [--rebuild] [--data DIR]
 *
 * 1. Seeds N messages over D days with their events and rollups straight into
 *    the database (analytics-seed.ts). Reports seeding time.
 * 2. Checks one day's stats against a count over the events table.
 * 3. Times every analytics endpoint over HTTP (p50/p95 of --runs calls).
 * 4. Uploads a CSV of --suppressions rows through POST /v1/suppressions/upload
 *    and reports time and peak RSS (suppressions.ts, also runnable alone).
 * With --rebuild it also times `pigeon analytics rebuild` (SQL over every event).
 * With --data DIR the seeded database is kept in DIR and reused by later runs.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { createApp, App } from '../src/app';
import { createKey } from '../src/auth/keys';
import type { Scope } from '../src/auth/scopes';
import { DAY, HOUR } from '../src/analytics/rollup';
import { rebuildRollups } from '../src/analytics/rebuild';
import { seed, SeedStats } from './analytics-seed';
import { suppressionUpload } from './suppressions';

interface Options {
  messages: number;
  days: number;
  suppressions: number;
  runs: number;
  rebuild: boolean;
  /** Keep the seeded database here and reuse it on the next run. */
  data?: string;
}

/** `--name value` or `--name=value`. */
export function argValue(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(`--${name}`);
  if (i >= 0) return argv[i + 1];
  return argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

function options(argv: string[]): Options {
  const num = (name: string, fallback: number) => Number(argValue(argv, name) ?? fallback);
  const data = argValue(argv, 'data');
  return {
    messages: num('messages', 1_000_000), days: num('days', 365), suppressions: num('suppressions', 1_000_000), runs: num('runs', 15),
    rebuild: argv.includes('--rebuild'), data: data ? path.resolve(data) : undefined,
  };
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

/** Seeds a fresh database, or (with --data DIR) reuses one seeded before and keeps it. */
async function seeded(app: App, opts: Options): Promise<SeedStats> {
  const saved = opts.data ? path.join(opts.data, 'seed.json') : undefined;
  if (saved && fs.existsSync(saved)) {
    const s = JSON.parse(fs.readFileSync(saved, 'utf8')) as SeedStats;
    console.log(`reusing ${s.messages} messages, ${s.events} events seeded earlier in ${opts.data}`);
    return s;
  }
  // Seeding holds the one database connection; background workers would time out waiting for it.
  await Promise.all(app.workers.map((w) => w.stop()));
  console.log(`seeding ${opts.messages} messages over ${opts.days} days (node ${process.version}, ${os.cpus().length} cores)…`);
  const s = await seed(app, opts);
  const dbFile = path.join(app.config.dataDir, 'pigeon.sqlite');
  console.log(`seeded ${s.messages} messages, ${s.events} events, ${s.rollupRows} rollup rows in ${s.seconds.toFixed(1)} s ` +
    `(${Math.round((s.messages + s.events) / s.seconds)} rows/s); database ${(fs.statSync(dbFile).size / 2 ** 20).toFixed(0)} MiB`);
  if (saved) fs.writeFileSync(saved, JSON.stringify(s));
  return s;
}

/** Entry of `npm run bench analytics [--options]`. */
export async function run(args: string[]): Promise<void> {
  const opts = options(args);
  const dir = opts.data ?? fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-bench-'));
  fs.mkdirSync(dir, { recursive: true });
  const app = await createApp({
    dataDir: dir, log: { level: 'warn' }, http: { port: 0 }, smtp: { submission: { port: 0 }, inbound: { port: 0 } }, metrics: { port: 0 },
    database: { synchronous: 'NORMAL' }, rateLimit: { requestsPerSecond: 1e6, burst: 1e6 }, suppressions: { uploadMaxBytes: 512 * 2 ** 20 },
  }, { logStream: new Writable({ write: (_c, _e, cb) => cb() }) });
  try {
    const key = await newKey(app, 'test', ['suppressions:manage']);
    const liveKey = await newKey(app, 'live', ['analytics:read']);
    const s = await seeded(app, opts);
    console.log(`load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
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
    if (!opts.data) fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** A key made directly in the database (the bootstrap key exists only on a fresh database). */
async function newKey(app: App, mode: 'test' | 'live', scopes: Scope[]): Promise<string> {
  const account = (await app.db('accounts').first('id')).id as string;
  return (await createKey(app.db, { accountId: account, name: `bench ${mode}`, mode, scopes }, Date.now())).secret;
}

if (require.main === module) {
  run(process.argv.slice(2)).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
