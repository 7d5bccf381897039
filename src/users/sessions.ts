/**
 * Console sessions. The cookie carries 32 random bytes; the database holds
 * only their SHA-256, so a leaked database row is no cookie. Each sign-in
 * makes a new session (an id presented before sign-in is never promoted, so
 * a planted cookie cannot become a session). A session ends when unused for
 * `console.sessionIdleMinutes` or `console.sessionMaxHours` after sign-in.
 */
import crypto from 'node:crypto';
import type { Queryable } from '../db';
import type { Config } from '../config';
import { sha256 } from './store';

export const SESSION_COOKIE = 'pigeon_session';
/** Cookie values are 32 bytes in base64url: anything else is not looked up. */
const COOKIE_VALUE = /^[A-Za-z0-9_-]{43}$/;
/** last_seen_at is written at most this often, so reading a page costs no write. */
const TOUCH_EVERY_MS = 60_000;

export interface Session {
  tokenHash: string;
  userId: string;
  csrfToken: string;
  createdAt: number;
  lastSeenAt: number;
}

interface SessionRow {
  token_hash: string;
  user_id: string;
  csrf_token: string;
  created_at: number;
  last_seen_at: number;
}

export interface SessionLimits {
  idleMs: number;
  maxMs: number;
}

export const sessionLimits = (config: Config): SessionLimits => ({
  idleMs: config.console.sessionIdleMinutes * 60_000,
  maxMs: config.console.sessionMaxHours * 3600_000,
});

export async function createSession(db: Queryable, userId: string, now: number): Promise<{ token: string; session: Session }> {
  const token = crypto.randomBytes(32).toString('base64url');
  const row: SessionRow = { token_hash: sha256(token), user_id: userId, csrf_token: crypto.randomBytes(32).toString('base64url'), created_at: now, last_seen_at: now };
  await db('user_sessions').insert(row);
  return { token, session: toSession(row) };
}

/** The live session for a cookie value, touched; undefined (and an expired row deleted) otherwise. */
export async function findSession(db: Queryable, token: string, now: number, limits: SessionLimits): Promise<Session | undefined> {
  if (!COOKIE_VALUE.test(token)) return undefined;
  const row = await db<SessionRow>('user_sessions').where({ token_hash: sha256(token) }).first();
  if (!row) return undefined;
  const session = toSession(row);
  if (now - session.lastSeenAt >= limits.idleMs || now - session.createdAt >= limits.maxMs) {
    await db('user_sessions').where({ token_hash: row.token_hash }).delete();
    return undefined;
  }
  if (now - session.lastSeenAt >= TOUCH_EVERY_MS) {
    await db('user_sessions').where({ token_hash: row.token_hash }).update({ last_seen_at: now });
    session.lastSeenAt = now;
  }
  return session;
}

export async function deleteSession(db: Queryable, tokenHash: string): Promise<void> {
  await db('user_sessions').where({ token_hash: tokenHash }).delete();
}

/** Removes sessions past either limit (called now and then, so abandoned rows do not pile up). */
export async function sweepSessions(db: Queryable, now: number, limits: SessionLimits): Promise<number> {
  return db('user_sessions').where('last_seen_at', '<=', now - limits.idleMs).orWhere('created_at', '<=', now - limits.maxMs).delete();
}

/** Constant-time comparison of the X-CSRF-Token header with the session's token. */
export function csrfMatches(session: Session, header: string): boolean {
  const a = Buffer.from(header);
  const b = Buffer.from(session.csrfToken);
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}

const toSession = (r: SessionRow): Session => ({
  tokenHash: r.token_hash, userId: r.user_id, csrfToken: r.csrf_token, createdAt: Number(r.created_at), lastSeenAt: Number(r.last_seen_at),
});
