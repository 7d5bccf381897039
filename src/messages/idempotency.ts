/**
 * Idempotency-Key on POST /v1/messages/send. Before any work a `pending` row
 * claims the key (account, mode, key); a second request with the key while it
 * is pending gets 409. The response is stored as `done` in the same
 * transaction as the messages, so a retry after a crash either finds the
 * messages and their response, or neither. A failed request releases the key.
 * Records live 24 hours; older ones are ignored and purged now and then.
 */
import crypto from 'node:crypto';
import type { Queryable, Tx } from '../db';
import { fromJson, toJson } from '../db';
import type { Mode } from '../auth/scopes';
import { ApiError, badRequest, conflict, unprocessable } from '../http/errors';

export const IDEMPOTENCY_TTL_MS = 24 * 3600_000;
/** A pending row this old belongs to a request that died with its process. */
const ABANDONED_AFTER_MS = 10 * 60_000;
const PURGE_EVERY_MS = 10 * 60_000;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export interface IdempotencyScope {
  accountId: string;
  mode: Mode;
  key: string;
}

export type Begin = { kind: 'new' } | { kind: 'replay'; status: number; body: unknown };

/** The header value, validated; undefined when absent. */
export function idempotencyKeyOf(header: string | undefined): string | undefined {
  if (header === undefined || header === '') return undefined;
  if (!KEY_PATTERN.test(header)) {
    throw badRequest('invalid_idempotency_key', 'Idempotency-Key must be 1 to 255 printable ASCII characters', 'Idempotency-Key');
  }
  return header;
}

/** SHA-256 of the body with object keys sorted, so key order and whitespace do not matter. */
export function requestHash(body: unknown): string {
  return crypto.createHash('sha256').update(stableJson(body)).digest('hex');
}

/**
 * JSON with object keys sorted (undefined members left out, as JSON.stringify
 * does). Iterative: validation bounds how deep template data nests, but the
 * hash must not be where a deep body overflows the stack if it ever gets here.
 */
export function stableJson(root: unknown): string {
  const out: string[] = [];
  // Work items: a value to write, or literal text (brackets, commas, keys) to copy.
  const todo: Array<{ value: unknown } | string> = [{ value: root }];
  while (todo.length) {
    const item = todo.pop()!;
    if (typeof item === 'string') {
      out.push(item);
      continue;
    }
    const v = item.value;
    if (v === null || typeof v !== 'object') {
      out.push(JSON.stringify(v) ?? 'null');
      continue;
    }
    const parts: Array<{ value: unknown } | string> = [];
    if (Array.isArray(v)) {
      v.forEach((value, i) => parts.push(...(i ? [','] : []), { value }));
    } else {
      const record = v as Record<string, unknown>;
      const keys = Object.keys(record).sort().filter((k) => record[k] !== undefined);
      keys.forEach((k, i) => parts.push(`${i ? ',' : ''}${JSON.stringify(k)}:`, { value: record[k] }));
    }
    const [open, close] = Array.isArray(v) ? ['[', ']'] : ['{', '}'];
    todo.push(close, ...parts.reverse(), open);
  }
  return out.join('');
}

const isUniqueViolation = (err: unknown): boolean => {
  const code = (err as { code?: string }).code;
  return code === 'SQLITE_CONSTRAINT' || code === '23505';
};

const where = (s: IdempotencyScope) => ({ account_id: s.accountId, mode: s.mode, key: s.key });

let lastPurge = 0;

/** Claims the key, or says what the earlier request with it answered. */
export async function beginIdempotent(db: Queryable, scope: IdempotencyScope, hash: string, now: number): Promise<Begin> {
  if (now - lastPurge > PURGE_EVERY_MS) {
    lastPurge = now;
    await db('idempotency_keys').where('created_at', '<', now - IDEMPOTENCY_TTL_MS).delete();
  }
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await db('idempotency_keys').insert({ ...where(scope), request_hash: hash, state: 'pending', created_at: now });
      return { kind: 'new' };
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
    }
    const row = await db('idempotency_keys').where(where(scope)).first();
    if (!row) continue; // released meanwhile
    const age = now - Number(row.created_at);
    const dead = age >= IDEMPOTENCY_TTL_MS || (row.state === 'pending' && age >= ABANDONED_AFTER_MS);
    if (dead) {
      await db('idempotency_keys').where({ ...where(scope), created_at: row.created_at }).delete();
      continue;
    }
    return existing(row, hash);
  }
  throw conflict('idempotency_conflict', 'a request with this Idempotency-Key is in progress; retry later', 'Idempotency-Key');
}

function existing(row: { request_hash: string; state: string; status_code: number | null; response: string | null }, hash: string): Begin {
  if (row.request_hash !== hash) {
    throw unprocessable('idempotency_key_reused', 'this Idempotency-Key was used with a different request body in the last 24 hours', 'Idempotency-Key');
  }
  if (row.state !== 'done') {
    throw conflict('idempotency_conflict', 'a request with this Idempotency-Key is in progress; retry later', 'Idempotency-Key');
  }
  return { kind: 'replay', status: Number(row.status_code), body: fromJson(row.response, null) };
}

/** Stores the response; call inside the transaction that writes the messages. */
export async function completeIdempotent(trx: Tx, scope: IdempotencyScope, status: number, body: unknown): Promise<void> {
  const n = await trx('idempotency_keys').where({ ...where(scope), state: 'pending' }).update({ state: 'done', status_code: status, response: toJson(body) });
  if (n !== 1) throw new ApiError(409, 'conflict_error', 'idempotency_conflict', 'the Idempotency-Key record changed during the request', 'Idempotency-Key');
}

/** Releases the key after a request that stored nothing. */
export async function abandonIdempotent(db: Queryable, scope: IdempotencyScope): Promise<void> {
  await db('idempotency_keys').where({ ...where(scope), state: 'pending' }).delete();
}
