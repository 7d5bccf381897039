/**
 * The suppression list: addresses an account must never send to again (hard
 * bounces, complaints, unsubscribes, uploads). Shared by both modes of an
 * account. Other modules call these functions, never the table.
 */
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

/** Addresses compare case-insensitively; stored trimmed and lower-cased. */
export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

export async function isSuppressed(db: Queryable, accountId: string, email: string): Promise<boolean> {
  const row = await db('suppressions').where({ account_id: accountId, email: normalizeEmail(email) }).first('id');
  return Boolean(row);
}

/** Adds the address unless present; returns true when it was added. */
export async function addSuppression(
  db: Queryable,
  input: { accountId: string; email: string; reason: SuppressionReason; sourceMessageId?: string | null },
  now: number,
): Promise<boolean> {
  const email = normalizeEmail(input.email);
  if (await db('suppressions').where({ account_id: input.accountId, email }).first('id')) return false;
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

export async function getSuppression(db: Queryable, accountId: string, email: string): Promise<Suppression | undefined> {
  const r = await db('suppressions').where({ account_id: accountId, email: normalizeEmail(email) }).first();
  return r && {
    id: r.id,
    accountId: r.account_id,
    email: r.email,
    reason: r.reason,
    sourceMessageId: r.source_message_id,
    createdAt: Number(r.created_at),
  };
}
