/**
 * Rollups: the counters behind every analytics endpoint, kept in the same
 * transaction as the event that changes them. `applyRollup` is an event sink
 * (registered by the module entry); `rollupCounter` is how delivery counts the
 * outcomes that are not events (`deferred`, `suppressed`).
 *
 * One change adds to (1 + tags) rows per grain in each of the two row sets
 * of the one table: the totals (hour and day rows) and the recipient domain's
 * (hour, day and month rows); each in the '' tag row set (every message,
 * counted once) and in each tag's row set. Queries read exactly one row set,
 * so totals never double count.
 */
import type { Queryable, Tx } from '../db';
import { fromJson } from '../db';
import { addToCounters } from '../db/buffer';
import type { Mode } from '../auth/scopes';
import type { EventDims, RecordedEvent } from '../events/record';
import { DEFAULT_POOL } from '../pools/lookup';

export const METRICS = [
  'sent', 'delivered', 'bounced_hard', 'bounced_soft', 'complained',
  'opened_total', 'opened_unique', 'clicked_total', 'clicked_unique', 'suppressed', 'deferred',
] as const;

export type Metric = (typeof METRICS)[number];
export type Counts = Record<Metric, number>;
export type Deltas = Partial<Counts>;

export const HOUR = 3_600_000;
export const DAY = 86_400_000;

/**
 * Bucket sizes. Both row sets have hour and day rows; the per-domain rows also
 * have UTC calendar-month rows, because a year of a long tail of recipient
 * domains is hundreds of thousands of day rows but a few thousand month rows.
 */
export type Grain = 'h' | 'd' | 'm';

/** Start of the bucket of `grain` containing `ms`. */
export function floorTo(grain: Grain, ms: number): number {
  if (grain === 'h') return Math.floor(ms / HOUR) * HOUR;
  if (grain === 'd') return Math.floor(ms / DAY) * DAY;
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

/** Start of the first bucket of `grain` at or after `ms`. */
export function ceilTo(grain: Grain, ms: number): number {
  const floor = floorTo(grain, ms);
  if (floor === ms) return ms;
  if (grain === 'm') {
    const d = new Date(floor);
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  }
  return floor + (grain === 'h' ? HOUR : DAY);
}

export const TOTAL_GRAINS: Grain[] = ['h', 'd'];
export const DOMAIN_GRAINS: Grain[] = ['h', 'd', 'm'];

/** Where one counted thing belongs. */
export interface RollupDims {
  accountId: string;
  mode: Mode;
  /** When it happened (ms); picks the hour and day buckets. */
  at: number;
  sendingDomain: string;
  recipientDomain: string;
  tags: string[];
  /** null means the default pool. */
  ipPool: string | null;
}

export const zeroCounts = (): Counts => Object.fromEntries(METRICS.map((m) => [m, 0])) as Counts;

/** The distinct non-empty tags plus '' (the every-message row set). */
export function tagSets(tags: readonly string[]): string[] {
  return ['', ...new Set(tags.filter((t) => typeof t === 'string' && t !== ''))];
}

/**
 * The rollup table. `recipient_domain` is '' (ALL_DOMAINS) on the totals' rows, which count every recipient
 * domain together, and a domain's name on the breakdown's: one table, so that one change is one multi-row upsert
 * (migrations/20261125010001_analytics_rollups.js).
 */
export const ROLLUPS = 'analytics_rollups';
export const ALL_DOMAINS = '';

/**
 * Rollup rows (before upsert) that one change adds to: every grain of both row sets (totals and recipient
 * domain), every tag row set. Each row is one object literal with the deltas assigned after: spreading a shared
 * `common` object into five rows cost ~35 µs a call (V8's generic clone path), the largest share of recording a
 * delivery.
 */
export function rollupRows(dims: RollupDims, deltas: Deltas): Record<string, unknown>[] {
  const rows: Record<string, unknown>[] = [];
  const { accountId: account_id, mode, sendingDomain: sending_domain, recipientDomain } = dims;
  const ip_pool = dims.ipPool || DEFAULT_POOL;
  const buckets = { h: floorTo('h', dims.at), d: floorTo('d', dims.at), m: floorTo('m', dims.at) };
  for (const tag of tagSets(dims.tags)) {
    for (const grain of TOTAL_GRAINS) {
      rows.push(withDeltas({ account_id, mode, tag, grain, recipient_domain: ALL_DOMAINS, bucket: buckets[grain], sending_domain, ip_pool }, deltas));
    }
    for (const grain of DOMAIN_GRAINS) {
      rows.push(withDeltas({ account_id, mode, tag, grain, recipient_domain: recipientDomain, bucket: buckets[grain], sending_domain, ip_pool }, deltas));
    }
  }
  return rows;
}

function withDeltas(row: Record<string, unknown>, deltas: Deltas): Record<string, unknown> {
  for (const m in deltas) row[m] = deltas[m as Metric];
  return row;
}

export const ROLLUP_KEY = ['account_id', 'mode', 'tag', 'grain', 'recipient_domain', 'bucket', 'sending_domain', 'ip_pool'];

/** Adds `deltas` to every rollup row `dims` belongs to. */
export async function addToRollups(db: Queryable, dims: RollupDims, deltas: Deltas): Promise<void> {
  const metrics = (Object.keys(deltas) as Metric[]).filter((m) => METRICS.includes(m) && deltas[m]);
  if (!metrics.length) return;
  const clean = Object.fromEntries(metrics.map((m) => [m, deltas[m]]));
  // Summed with the other changes of a writer transaction and written in one statement at its commit.
  await addToCounters(db, ROLLUPS, ROLLUP_KEY, rollupRows(dims, clean), metrics);
}

/**
 * Counts one outcome that is not an event. Delivery calls this in the
 * transaction that changes the message: `deferred` for every temporary
 * failure, `suppressed` when a send is stopped by the suppression list.
 */
export async function rollupCounter(trx: Tx, dims: RollupDims, metric: Metric): Promise<void> {
  await addToRollups(trx, dims, { [metric]: 1 });
}

interface MessageDimsRow {
  account_id: string;
  mode: string;
  sending_domain: string;
  recipient_domain: string;
  tags: string;
  ip_pool: string | null;
}

/** The rollup dimensions of a stored message, or undefined when there is no such message. */
export async function messageDims(db: Queryable, messageId: string, at: number): Promise<RollupDims | undefined> {
  const row: MessageDimsRow | undefined = await db('messages')
    .where({ id: messageId })
    .first('account_id', 'mode', 'sending_domain', 'recipient_domain', 'tags', 'ip_pool');
  if (!row) return undefined;
  return {
    accountId: row.account_id,
    mode: row.mode as Mode,
    at,
    sendingDomain: row.sending_domain,
    recipientDomain: row.recipient_domain,
    tags: fromJson<string[]>(row.tags, []),
    ipPool: row.ip_pool,
  };
}

/** `rollupCounter` for a message by id: looks its dimensions up (by primary key). */
export async function rollupMessageCounter(trx: Tx, messageId: string, metric: Metric, at: number): Promise<void> {
  const dims = await messageDims(trx, messageId, at);
  if (dims) await addToRollups(trx, dims, { [metric]: 1 });
}

/** Is this the first event of its type for its message? (The event row is already inserted.) */
async function isFirstOfType(trx: Tx, event: RecordedEvent): Promise<boolean> {
  const other = await trx('events').where({ message_id: event.messageId, type: event.type }).whereNot('id', event.id).first('id');
  return !other;
}

/** What an event adds to the counters. Opens and clicks are unique per message. */
async function eventDeltas(trx: Tx, event: RecordedEvent): Promise<Deltas | undefined> {
  switch (event.type) {
    case 'message.sent':
      return { sent: 1 };
    case 'message.delivered':
      return { delivered: 1 };
    case 'message.bounced':
      return event.data.type === 'soft' ? { bounced_soft: 1 } : { bounced_hard: 1 };
    case 'message.complained':
      return { complained: 1 };
    case 'message.opened':
      return (await isFirstOfType(trx, event)) ? { opened_total: 1, opened_unique: 1 } : { opened_total: 1 };
    case 'message.clicked':
      return (await isFirstOfType(trx, event)) ? { clicked_total: 1, clicked_unique: 1 } : { clicked_total: 1 };
    default:
      return undefined; // message.queued and anything else is not a rollup metric
  }
}

/** Event sink: keeps the rollups in step with the events table, in the event's transaction. */
export async function applyRollup(trx: Tx, event: RecordedEvent): Promise<void> {
  if (!event.messageId) return;
  const deltas = await eventDeltas(trx, event);
  if (!deltas) return;
  const dims = event.dims ? dimsOf(event, event.dims) : await messageDims(trx, event.messageId, event.at);
  if (!dims) return;
  // The event's own account and mode win: rollups are always read per account and mode.
  dims.accountId = event.accountId;
  dims.mode = event.mode;
  await addToRollups(trx, dims, deltas);
}

/** Written out, not spread: this runs for every event the MTA records. */
function dimsOf(event: RecordedEvent, d: EventDims): RollupDims {
  const { sendingDomain, recipientDomain, tags, ipPool } = d;
  return { accountId: event.accountId, mode: event.mode, at: event.at, sendingDomain, recipientDomain, tags, ipPool };
}
