/**
 * Console users: who may sign in, with which role, for which account. Emails
 * are stored lower-cased, so they are unique case-insensitively; a user made
 * without a password gets one through a single-use set-password token.
 */
import crypto from 'node:crypto';
import type { Db, Queryable } from '../db';
import { newId } from '../ids';
import { conflict, unprocessable } from '../http/errors';

export type Role = 'admin' | 'member';
export const ROLES: readonly Role[] = ['admin', 'member'];

export interface User {
  id: string;
  email: string;
  role: Role;
  accountId: string | null;
  createdAt: number;
  disabled: boolean;
  hasPassword: boolean;
}

interface UserRow {
  id: string;
  email: string;
  password_hash: string | null;
  role: Role;
  account_id: string | null;
  created_at: number;
  disabled: number | boolean;
}

const toUser = (r: UserRow): User => ({
  id: r.id,
  email: r.email,
  role: r.role,
  accountId: r.account_id,
  createdAt: Number(r.created_at),
  disabled: Boolean(r.disabled),
  hasPassword: r.password_hash !== null,
});

export const normalizeEmail = (email: string) => email.trim().toLowerCase();

/** How long a set-password link works. */
export const PASSWORD_TOKEN_TTL_MS = 24 * 3600_000;
/** Users listed at most (the operator screen and the CLI show them all). */
export const USERS_LIST_MAX = 1000;

export const sha256 = (value: string) => crypto.createHash('sha256').update(value).digest('hex');

export async function createUser(db: Queryable, input: { email: string; role: Role; accountId: string | null; passwordHash: string | null }, now: number): Promise<User> {
  if (input.role === 'member' && !input.accountId) throw unprocessable('account_required', 'a member belongs to one account: name it', 'account');
  const email = normalizeEmail(input.email);
  if (await db('users').where({ email }).first()) throw conflict('user_exists', `a user with email ${email} already exists`, 'email');
  const row: UserRow = {
    id: newId('usr'), email, password_hash: input.passwordHash, role: input.role, account_id: input.accountId, created_at: now, disabled: false,
  };
  await db('users').insert(row);
  return toUser(row);
}

export async function findUserByEmail(db: Queryable, email: string): Promise<(User & { passwordHash: string | null }) | undefined> {
  const row = await db<UserRow>('users').where({ email: normalizeEmail(email) }).first();
  return row && { ...toUser(row), passwordHash: row.password_hash };
}

export async function getUser(db: Queryable, id: string): Promise<User | undefined> {
  const row = await db<UserRow>('users').where({ id }).first();
  return row && toUser(row);
}

export async function listUsers(db: Queryable): Promise<User[]> {
  const rows = await db<UserRow>('users').orderBy('id').limit(USERS_LIST_MAX);
  return rows.map(toUser);
}

/** Deletes the user with their sessions and tokens; false when there was none. */
export async function deleteUser(db: Queryable, id: string): Promise<boolean> {
  await db('user_sessions').where({ user_id: id }).delete();
  await db('password_tokens').where({ user_id: id }).delete();
  return (await db('users').where({ id }).delete()) > 0;
}

/** A single-use set-password token (returned once; only its hash is stored), replacing any earlier one. */
export async function issuePasswordToken(db: Queryable, userId: string, now: number): Promise<string> {
  const token = crypto.randomBytes(32).toString('base64url');
  await db('password_tokens').where({ user_id: userId }).delete();
  await db('password_tokens').insert({ token_hash: sha256(token), user_id: userId, expires_at: now + PASSWORD_TOKEN_TTL_MS });
  return token;
}

export async function passwordTokenUsable(db: Queryable, token: string, now: number): Promise<boolean> {
  const row = await db('password_tokens').where({ token_hash: sha256(token) }).first();
  return Boolean(row) && Number(row.expires_at) > now;
}

/**
 * Spends a token: sets the password and ends the user's sessions, in one
 * transaction. Returns false for an unknown, used or expired token.
 */
export async function redeemPasswordToken(db: Db, token: string, passwordHash: string, now: number): Promise<boolean> {
  const tokenHash = sha256(token);
  return db.transaction(async (trx) => {
    const row = await trx('password_tokens').where({ token_hash: tokenHash }).first();
    if (!row) return false;
    // The delete decides: of two concurrent redemptions only one deletes the row.
    const deleted = await trx('password_tokens').where({ token_hash: tokenHash }).delete();
    if (!deleted || Number(row.expires_at) <= now) return false;
    await trx('users').where({ id: row.user_id }).update({ password_hash: passwordHash });
    await trx('user_sessions').where({ user_id: row.user_id }).delete();
    return true;
  });
}

export function setPasswordUrl(publicUrl: string, token: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/#/set-password/${token}`;
}
