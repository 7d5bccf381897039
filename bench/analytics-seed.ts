/*
 * Seeding for the analytics benchmark: N messages over D days with their
 * events (queued, sent, delivered or bounced, opens, clicks, complaints),
 * written straight to the database with prepared multi-row inserts on the raw
 * SQLite connection, and the rollup rows the event sink would have written
 * (same row sets: every tag row set, every grain), aggregated a few days at a
 * time in memory.
 */
import type { Database, Statement } from 'sqlite3';
import type { App } from '../src/app';
import { WRITER_CACHE_MIB } from '../src/db';
import { newId } from '../src/ids';
import { ALL_DOMAINS, DAY, DOMAIN_GRAINS, HOUR, Deltas, ROLLUP_KEY, ROLLUPS, RollupDims, TOTAL_GRAINS, floorTo, tagSets } from '../src/analytics/rollup';
import { DEFAULT_POOL } from '../src/pools/lookup';

export interface SeedOptions {
  messages: number;
  days: number;
}

export interface SeedStats {
  messages: number;
  events: number;
  rollupRows: number;
  seconds: number;
  from: number;
  to: number;
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

/**
 * Rollup rows aggregated in memory per UTC day, written once no later event
 * can reach that day. The row set of each change is exactly the sink's
 * (tagSets, every grain, both row sets); only the bookkeeping is compact here.
 */
class RollupBuffer {
  /** day start → key → [key values..., metric counts...] (ROLLUP_KEY's order) */
  private days = new Map<number, Map<string, unknown[]>>();
  rows = 0;

  add(dims: RollupDims, deltas: Deltas): void {
    const day = Math.floor(dims.at / DAY) * DAY;
    let part = this.days.get(day);
    if (!part) this.days.set(day, (part = new Map()));
    const pool = dims.ipPool || DEFAULT_POOL;
    const buckets = { h: Math.floor(dims.at / HOUR) * HOUR, d: day, m: floorTo('m', dims.at) };
    for (const tag of tagSets(dims.tags)) {
      for (const grain of TOTAL_GRAINS) this.count(part, [dims.accountId, dims.mode, tag, grain, ALL_DOMAINS, buckets[grain], dims.sendingDomain, pool], deltas);
      for (const grain of DOMAIN_GRAINS) {
        this.count(part, [dims.accountId, dims.mode, tag, grain, dims.recipientDomain, buckets[grain], dims.sendingDomain, pool], deltas);
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
      writer.insert(ROLLUPS, [...ROLLUP_KEY, ...METRIC_COLUMNS], [...part.values()], ROLLUP_KEY);
      this.rows += part.size;
      this.days.delete(day);
    }
  }
}

export async function seed(app: App, opts: SeedOptions): Promise<SeedStats> {
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
    // back to the writer's own settings (src/db/index.ts), so the bench measures what runs in production
    await writer.exec(`PRAGMA synchronous = ${app.config.database.synchronous}; PRAGMA cache_size = -${WRITER_CACHE_MIB * 1024};`);
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

