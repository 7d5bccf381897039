/**
 * Reading and cancelling messages. Every query is scoped by account and mode,
 * so another account's id, or the other mode's, is simply not found. Columns
 * are mapped to camelCase records here; routes shape them for the API.
 */
import type { Queryable } from '../db';
import { fromJson } from '../db';
import type { Mode } from '../auth/scopes';
import type { MessageStatus } from './schemas';

export interface Scope {
  accountId: string;
  mode: Mode;
}

export interface MessageRecord {
  id: string;
  accountId: string;
  mode: Mode;
  status: MessageStatus;
  batchId: string;
  fromEmail: string;
  fromName: string | null;
  toEmail: string;
  toName: string | null;
  rcptType: 'to' | 'cc' | 'bcc';
  cc: string[];
  subject: string | null;
  tags: string[];
  metadata: Record<string, string>;
  ipPool: string | null;
  trackOpens: boolean;
  trackClicks: boolean;
  listUnsubscribe: boolean;
  domainVerified: boolean;
  source: string | null;
  messageIdHeader: string;
  attempts: number;
  lastResponse: string | null;
  createdAt: number;
  updatedAt: number;
  sendAt: number | null;
  sentAt: number | null;
  deliveredAt: number | null;
  bouncedAt: number | null;
}

export interface AttemptRecord {
  attemptedAt: number;
  mxHost: string | null;
  sourceIp: string | null;
  tls: boolean | null;
  smtpCode: number | null;
  enhancedCode: string | null;
  response: string | null;
  outcome: string;
  durationMs: number | null;
  transcript: string | null;
}

export interface EventRecord {
  id: string;
  type: string;
  createdAt: number;
  data: Record<string, unknown>;
}

type Row = Record<string, any>;
const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
const bool = (v: unknown): boolean | null => (v === null || v === undefined ? null : Boolean(v));

function toRecord(r: Row): MessageRecord {
  return {
    id: r.id, accountId: r.account_id, mode: r.mode, status: r.status, batchId: r.batch_id,
    fromEmail: r.from_email, fromName: r.from_name, toEmail: r.to_email, toName: r.to_name, rcptType: r.rcpt_type,
    cc: fromJson<string[]>(r.cc, []), subject: r.subject, tags: fromJson<string[]>(r.tags, []),
    metadata: fromJson<Record<string, string>>(r.metadata, {}), ipPool: r.ip_pool,
    trackOpens: Boolean(r.track_opens), trackClicks: Boolean(r.track_clicks), listUnsubscribe: Boolean(r.list_unsubscribe),
    domainVerified: Boolean(r.domain_verified), source: r.source, messageIdHeader: r.message_id_header,
    attempts: Number(r.attempts), lastResponse: r.last_response,
    createdAt: Number(r.created_at), updatedAt: Number(r.updated_at), sendAt: num(r.send_at),
    sentAt: num(r.sent_at), deliveredAt: num(r.delivered_at), bouncedAt: num(r.bounced_at),
  };
}

const scoped = (db: Queryable, scope: Scope) => db('messages').where({ account_id: scope.accountId, mode: scope.mode });

export async function getMessage(db: Queryable, scope: Scope, id: string): Promise<MessageRecord | undefined> {
  const row = await scoped(db, scope).andWhere({ id }).first();
  return row && toRecord(row);
}

export async function attemptsOf(db: Queryable, messageId: string): Promise<AttemptRecord[]> {
  const rows: Row[] = await db('message_attempts').where({ message_id: messageId }).orderBy('id', 'asc');
  return rows.map((r) => ({
    attemptedAt: Number(r.attempted_at), mxHost: r.mx_host, sourceIp: r.source_ip, tls: bool(r.tls),
    smtpCode: num(r.smtp_code), enhancedCode: r.enhanced_code, response: r.response, outcome: r.outcome, durationMs: num(r.duration_ms),
    transcript: r.transcript ?? null,
  }));
}

export async function eventsOf(db: Queryable, scope: Scope, messageId: string): Promise<EventRecord[]> {
  const rows: Row[] = await db('events').where({ message_id: messageId, account_id: scope.accountId, mode: scope.mode })
    .orderBy([{ column: 'created_at', order: 'asc' }, { column: 'id', order: 'asc' }]);
  return rows.map((r) => ({ id: r.id, type: r.type, createdAt: Number(r.created_at), data: fromJson(r.data, {}) }));
}

export interface ListFilters {
  status?: MessageStatus;
  to?: string;
  from?: string;
  tag?: string;
  createdAfter?: number;
  createdBefore?: number;
  /** Words searched in subject, recipient and sender (lower-cased). */
  q?: string;
}

/** `q` looks at an account's newest messages only, so a search costs a bounded scan however large the log. */
export const SEARCH_WINDOW = 10_000;

/** The filtered rows of one account and mode (exported so a test can check its query plan). */
export function filteredMessages(db: Queryable, scope: Scope, filters: ListFilters) {
  return scoped(db, scope).modify((q) => {
    if (filters.status) q.where('status', filters.status);
    if (filters.to) q.where('to_email', filters.to);
    if (filters.from) q.where('from_email', filters.from);
    // Tags are a JSON array of strings without quotes or backslashes, so `"tag"` matches one element exactly.
    if (filters.tag) q.whereRaw("tags LIKE ? ESCAPE '\\'", [`%"${filters.tag.replace(/[%_]/g, (c) => `\\${c}`)}"%`]);
    if (filters.createdAfter !== undefined) q.where('created_at', '>=', filters.createdAfter);
    if (filters.createdBefore !== undefined) q.where('created_at', '<', filters.createdBefore);
    if (filters.q) searchNewest(q, db, scope, filters.q);
  });
}

/** Subject, to or from contains `text` (case-insensitively), among the SEARCH_WINDOW newest messages. */
function searchNewest(q: ReturnType<typeof scoped>, db: Queryable, scope: Scope, text: string): void {
  const pattern = `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const newest = scoped(db, scope).select('id').orderBy('id', 'desc').limit(SEARCH_WINDOW);
  q.whereIn('id', newest).andWhere((w) => {
    for (const column of ['subject', 'to_email', 'from_email']) w.orWhereRaw(`LOWER(${column}) LIKE ? ESCAPE '\\'`, [pattern]);
  });
}

export type RetryOutcome = { kind: 'retried'; message: MessageRecord } | { kind: 'refused'; message: MessageRecord } | { kind: 'not_found' };

/** deferred → due now, in one conditional UPDATE that, like cancel, loses to a worker holding the row. */
export async function retryNow(db: Queryable, scope: Scope, id: string, now: number): Promise<RetryOutcome> {
  const changed = await scoped(db, scope).andWhere({ id, status: 'deferred' }).whereNotNull('next_attempt_at')
    .andWhere((q) => q.whereNull('lease_expires_at').orWhere('lease_expires_at', '<=', now))
    .update({ next_attempt_at: now, updated_at: now });
  const message = await getMessage(db, scope, id);
  if (!message) return { kind: 'not_found' };
  return changed === 1 ? { kind: 'retried', message } : { kind: 'refused', message };
}

/** Newest first; `limit` rows after `cursor` (an id); total counts every match. */
export async function listMessages(db: Queryable, scope: Scope, filters: ListFilters, limit: number, cursor?: string) {
  const base = filteredMessages(db, scope, filters);
  const rows: Row[] = await base.clone().modify((q) => {
    if (cursor) q.where('id', '<', cursor);
  }).orderBy('id', 'desc').limit(limit);
  const total = await base.clone().count({ n: '*' }).first();
  return { items: rows.map(toRecord), total: Number(total?.n ?? 0) };
}

export type CancelOutcome = { kind: 'cancelled'; message: MessageRecord } | { kind: 'refused'; message: MessageRecord } | { kind: 'not_found' };

/**
 * scheduled → cancelled in one conditional UPDATE: it only matches while the
 * row is scheduled and not leased by a delivery worker, which claims rows with
 * a conditional update of its own, so exactly one of the two wins.
 */
export async function cancelMessage(db: Queryable, scope: Scope, id: string, now: number): Promise<CancelOutcome> {
  const changed = await scoped(db, scope).andWhere({ id, status: 'scheduled' })
    .andWhere((q) => q.whereNull('lease_expires_at').orWhere('lease_expires_at', '<=', now))
    .update({ status: 'cancelled', next_attempt_at: null, lease_owner: null, lease_expires_at: null, updated_at: now });
  const message = await getMessage(db, scope, id);
  if (!message) return { kind: 'not_found' };
  return changed === 1 ? { kind: 'cancelled', message } : { kind: 'refused', message };
}
