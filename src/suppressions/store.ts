/**
 * The suppression list: addresses an account must never send to again (hard
 * bounces, complaints, unsubscribes, uploads). Shared by both modes of an
 * account. Other modules call these functions, never the table.
 */
import { domainToASCII } from 'node:url';
import type { Knex } from 'knex';
import type { Queryable } from '../db';
import { newId } from '../ids';

export type SuppressionReason = 'hard_bounce' | 'complaint' | 'unsubscribe' | 'manual' | string;

export interface Suppression {
  id: string;
  accountId: string;
  email: string;
  reason: string;
  sourceMessageId: string | null;
  createdAt: number;
}

/**
 * Addresses compare case-insensitively; stored trimmed and lower-cased, with an
 * internationalised domain in its ASCII (punycode) form so both spellings match.
 */
export function normalizeEmail(email: string): string {
  const value = email.trim().toLowerCase();
  const at = value.lastIndexOf('@');
  if (at < 0 || /^[\x00-\x7f]*$/.test(value)) return value;
  const ascii = domainToASCII(value.slice(at + 1));
  return ascii ? value.slice(0, at + 1) + ascii : value;
}

/**
 * Keeps only rows on the list: added one by one, or by an upload that has
 * committed. The subquery does not depend on the row, so SQLite runs it once
 * (it finds at most the account's one running upload), not once per row.
 */
function onTheList(q: Knex.QueryBuilder, accountId: string): Knex.QueryBuilder {
  return q.where((w) =>
    w.whereNull('suppressions.upload_id').orWhereNotIn(
      'suppressions.upload_id',
      (sub) => sub.select('id').from('suppression_uploads').where('suppression_uploads.account_id', accountId),
    ),
  );
}

export async function isSuppressed(db: Queryable, accountId: string, email: string): Promise<boolean> {
  const row = await onTheList(db('suppressions').where({ account_id: accountId, email: normalizeEmail(email) }), accountId).first('id');
  return Boolean(row);
}

/**
 * Which of these (account, address) pairs are on their account's list: one query for a claimed batch of
 * messages instead of one per message. Returns `account_id email` keys (addresses normalised).
 */
export async function suppressedAmong(db: Queryable, pairs: ReadonlyArray<{ accountId: string; email: string }>): Promise<Set<string>> {
  const found = new Set<string>();
  const wanted = [...new Map(pairs.map((p) => [`${p.accountId} ${normalizeEmail(p.email)}`, [p.accountId, normalizeEmail(p.email)]])).values()];
  for (let i = 0; i < wanted.length; i += 400) {
    const rows: Array<{ account_id: string; email: string }> = await db('suppressions')
      .whereIn(['account_id', 'email'], wanted.slice(i, i + 400))
      // rows of a running upload are not on the list yet (see onTheList)
      .where((w) => w.whereNull('upload_id').orWhereNotIn('upload_id', (sub) => sub.select('id').from('suppression_uploads')))
      .select('account_id', 'email');
    for (const r of rows) found.add(`${r.account_id} ${r.email}`);
  }
  return found;
}

/** Adds the address unless present; returns true when it was added. */
export async function addSuppression(
  db: Queryable,
  input: { accountId: string; email: string; reason: SuppressionReason; sourceMessageId?: string | null },
  now: number,
): Promise<boolean> {
  const email = normalizeEmail(input.email);
  const key = { account_id: input.accountId, email };
  if (await onTheList(db('suppressions').where(key), input.accountId).first('id')) return false;
  // Held by an upload still running: claim the row, so it stays listed whether that upload commits or fails.
  const claimed = await db('suppressions').where(key).whereNotNull('upload_id')
    .update({ upload_id: null, reason: input.reason, source_message_id: input.sourceMessageId ?? null, created_at: now });
  if (claimed) return true;
  await db('suppressions')
    .insert({
      id: newId('sup'),
      account_id: input.accountId,
      email,
      reason: input.reason,
      source_message_id: input.sourceMessageId ?? null,
      created_at: now,
    })
    .onConflict(['account_id', 'email'])
    .ignore();
  return true;
}

interface SuppressionRow {
  id: string;
  account_id: string;
  email: string;
  reason: string;
  source_message_id: string | null;
  created_at: number;
}

function toSuppression(r: SuppressionRow): Suppression {
  return {
    id: r.id,
    accountId: r.account_id,
    email: r.email,
    reason: r.reason,
    sourceMessageId: r.source_message_id,
    createdAt: Number(r.created_at),
  };
}

export async function getSuppression(db: Queryable, accountId: string, email: string): Promise<Suppression | undefined> {
  const r: SuppressionRow | undefined = await onTheList(db('suppressions').where({ account_id: accountId, email: normalizeEmail(email) }), accountId)
    .first('id', 'account_id', 'email', 'reason', 'source_message_id', 'created_at');
  return r && toSuppression(r);
}

export interface SuppressionFilter {
  reason?: string;
  /** Addresses starting with this text (normalised). */
  emailPrefix?: string;
}

/** Newest first; `limit` rows after `cursor` (an id) plus the total matching the filter. */
export async function listSuppressions(
  db: Queryable,
  accountId: string,
  filter: SuppressionFilter,
  limit: number,
  cursor?: string,
): Promise<{ items: Suppression[]; total: number }> {
  const base = () => {
    const q = onTheList(db('suppressions').where({ account_id: accountId }), accountId);
    if (filter.reason !== undefined) q.andWhere('reason', filter.reason);
    if (filter.emailPrefix) {
      // A range instead of LIKE: uses the (account_id, email) index and needs no escaping of % and _.
      const prefix = normalizeEmail(filter.emailPrefix);
      q.andWhere('email', '>=', prefix).andWhere('email', '<', prefix + '\uffff');
    }
    return q;
  };
  const page = base().orderBy('id', 'desc').limit(limit).select('id', 'account_id', 'email', 'reason', 'source_message_id', 'created_at');
  if (cursor) page.andWhere('id', '<', cursor);
  const [rows, counted] = await Promise.all([page, base().count({ n: '*' }).first()]);
  return { items: (rows as SuppressionRow[]).map(toSuppression), total: Number((counted as { n: number } | undefined)?.n ?? 0) };
}

/** Removes an address; returns what was removed. */
export async function deleteSuppression(db: Queryable, accountId: string, email: string): Promise<Suppression | undefined> {
  const found = await getSuppression(db, accountId, email);
  if (found) await db('suppressions').where({ id: found.id }).delete();
  return found;
}
