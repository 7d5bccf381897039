/**
 * The analytics export: events or messages of one account and mode in a time
 * range, as CSV (header row first) or a JSON array, streamed. Rows are read in
 * keyset pages of (created_at, id), so memory stays flat whatever the range,
 * and the single database connection is held for one page at a time, never for
 * the whole download (a slow client cannot stall sending).
 */
import { Readable } from 'node:stream';
import type { Knex } from 'knex';
import type { Queryable } from '../db';
import { fromJson } from '../db';
import { iso } from '../clock';
import { DEFAULT_POOL } from '../pools/lookup';
import type { AnalyticsScope } from './range';

export type ExportKind = 'events' | 'messages';
export type ExportFormat = 'csv' | 'json';

const PAGE_SIZE = 1000;

type Row = Record<string, unknown>;

interface Source {
  /** Column order of the CSV and key order of the JSON objects. */
  columns: string[];
  query(db: Queryable, scope: AnalyticsScope): Knex.QueryBuilder;
  /** Table alias whose created_at/id drive the keyset. */
  alias: string;
  shape(row: Row): Row;
}

const tagsOf = (row: Row): string[] => fromJson<string[]>(row.tags as string | null, []);

const EVENTS: Source = {
  columns: ['id', 'event', 'timestamp', 'message_id', 'to', 'from', 'sending_domain', 'recipient_domain', 'ip_pool', 'tags', 'data'],
  alias: 'e',
  query: (db, scope) =>
    db('events as e')
      .leftJoin('messages as m', 'm.id', 'e.message_id')
      .where({ 'e.account_id': scope.accountId, 'e.mode': scope.mode })
      .select('e.id', 'e.type', 'e.created_at', 'e.message_id', 'e.data', 'm.to_email', 'm.from_email', 'm.sending_domain', 'm.recipient_domain', 'm.ip_pool', 'm.tags'),
  shape: (r) => ({
    id: r.id,
    event: r.type,
    timestamp: iso(Number(r.created_at)),
    message_id: r.message_id ?? null,
    to: r.to_email ?? null,
    from: r.from_email ?? null,
    sending_domain: r.sending_domain ?? null,
    recipient_domain: r.recipient_domain ?? null,
    ip_pool: r.sending_domain == null ? null : ((r.ip_pool as string | null) ?? DEFAULT_POOL),
    tags: tagsOf(r),
    data: fromJson<Row>(r.data as string, {}),
  }),
};

const MESSAGES: Source = {
  columns: [
    'id', 'status', 'created_at', 'from', 'to', 'subject', 'sending_domain', 'recipient_domain', 'ip_pool', 'tags', 'metadata',
    'attempts', 'sent_at', 'delivered_at', 'bounced_at',
  ],
  alias: 'm',
  query: (db, scope) =>
    db('messages as m')
      .where({ 'm.account_id': scope.accountId, 'm.mode': scope.mode })
      .select('m.id', 'm.status', 'm.created_at', 'm.from_email', 'm.to_email', 'm.subject', 'm.sending_domain', 'm.recipient_domain',
        'm.ip_pool', 'm.tags', 'm.metadata', 'm.attempts', 'm.sent_at', 'm.delivered_at', 'm.bounced_at'),
  shape: (r) => ({
    id: r.id,
    status: r.status,
    created_at: iso(Number(r.created_at)),
    from: r.from_email,
    to: r.to_email,
    subject: r.subject ?? null,
    sending_domain: r.sending_domain,
    recipient_domain: r.recipient_domain,
    ip_pool: (r.ip_pool as string | null) ?? DEFAULT_POOL,
    tags: tagsOf(r),
    metadata: fromJson<Row>(r.metadata as string, {}),
    attempts: Number(r.attempts ?? 0),
    sent_at: iso(r.sent_at === null ? null : Number(r.sent_at)),
    delivered_at: iso(r.delivered_at === null ? null : Number(r.delivered_at)),
    bounced_at: iso(r.bounced_at === null ? null : Number(r.bounced_at)),
  }),
};

/** One keyset page after (lastAt, lastId), with the scope's filters. */
async function page(db: Queryable, source: Source, scope: AnalyticsScope, after: { at: number; id: string } | null): Promise<Row[]> {
  const a = source.alias;
  const q = source.query(db, scope).andWhere(`${a}.created_at`, '<', scope.to);
  if (after) {
    q.andWhere(`${a}.created_at`, '>=', after.at).andWhere((w) =>
      w.where(`${a}.created_at`, '>', after.at).orWhere((x) => x.where(`${a}.created_at`, after.at).andWhere(`${a}.id`, '>', after.id)));
  } else {
    q.andWhere(`${a}.created_at`, '>=', scope.from);
  }
  if (scope.sendingDomain !== undefined) q.andWhere('m.sending_domain', scope.sendingDomain);
  if (scope.ipPool !== undefined) q.andWhere(db.raw('COALESCE(m.ip_pool, ?) = ?', [DEFAULT_POOL, scope.ipPool]));
  return q.orderBy([{ column: `${a}.created_at` }, { column: `${a}.id` }]).limit(PAGE_SIZE);
}

/** Every matching row, page by page; tags are filtered here (they are a JSON list in the row). */
async function* rows(db: Queryable, source: Source, scope: AnalyticsScope): AsyncGenerator<Row[]> {
  let after: { at: number; id: string } | null = null;
  for (;;) {
    const batch = await page(db, source, scope, after);
    if (!batch.length) return;
    const last = batch[batch.length - 1];
    after = { at: Number(last.created_at), id: String(last.id) };
    const kept = scope.tag ? batch.filter((r) => tagsOf(r).includes(scope.tag)) : batch;
    if (kept.length) yield kept.map(source.shape);
    if (batch.length < PAGE_SIZE) return;
  }
}

/** A CSV cell: quoted when needed; cells a spreadsheet would run as a formula get a leading apostrophe. */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  let text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]|^\s|\s$/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

async function* render(db: Queryable, source: Source, scope: AnalyticsScope, format: ExportFormat): AsyncGenerator<string> {
  if (format === 'csv') yield source.columns.join(',') + '\r\n';
  else yield '[';
  let first = true;
  for await (const batch of rows(db, source, scope)) {
    if (format === 'csv') {
      yield batch.map((r) => source.columns.map((c) => csvCell(r[c])).join(',') + '\r\n').join('');
    } else {
      yield (first ? '\n' : ',\n') + batch.map((r) => JSON.stringify(r)).join(',\n');
      first = false;
    }
  }
  if (format === 'json') yield first ? ']\n' : '\n]\n';
}

export function exportStream(db: Queryable, scope: AnalyticsScope, kind: ExportKind, format: ExportFormat): Readable {
  return Readable.from(render(db, kind === 'events' ? EVENTS : MESSAGES, scope, format), { objectMode: false });
}
