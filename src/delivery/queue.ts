/**
 * The queue is the `messages` table: a row is due when next_attempt_at <= now
 * and no live lease holds it. Claiming is one conditional UPDATE that stamps
 * our lease on the due rows it picks, so two workers (or a worker and a
 * restarted one) can never both own a row; every later write is conditional on
 * still holding that lease. Nothing about the queue lives only in memory.
 *
 * On PostgreSQL (the scale-out path) the inner SELECT gains
 * FOR UPDATE SKIP LOCKED and runs once in a CTE (claimLocked); the rest is
 * portable. With several nodes on one database each claims only what it can
 * send (`sendable`, from pools/node-scope.ts: sandbox messages, and pools with
 * an address on this node); nextWakeAt looks at those rows only.
 */
import crypto from 'node:crypto';
import os from 'node:os';
import type { Config } from '../config';
import type { Knex } from 'knex';
import type { Db, Queryable } from '../db';
import { fromJson, isPostgres } from '../db';
import type { SendableScope } from '../pools/node-scope';
import type { Job } from './types';

/** Statuses a row can be claimed from (a `sending` row only once its lease has expired). */
const CLAIMABLE = ['queued', 'scheduled', 'deferred', 'sending'];
const WAITING = ['queued', 'scheduled', 'deferred'];

/** Destinations an operator paused (console): their messages wait, unclaimed, until resumed. */
const paused = (db: Queryable) => db('paused_destinations').select('domain');

/** The paused destinations, for the hand-off of fresh sends (the claim filters in SQL). A few rows at most. */
export async function pausedDestinations(db: Queryable): Promise<Set<string>> {
  return new Set((await paused(db)).map((r: { domain: string }) => r.domain));
}

/**
 * The rows in flight, as the partial index messages_sending_idx is defined: a literal, since SQLite uses a
 * partial index only for a WHERE it can match at prepare time, not for a bound value.
 */
const IN_FLIGHT = "messages.status = 'sending'";

/** This node's name: node.id, or the hostname (README "Running several nodes"). */
export const nodeId = (config: Config): string => config.node.id || os.hostname();

/** `mta-<node>-<pid>-<nonce>`: the node part lets a restarted node find its own leases among other nodes'. */
export const newLeaseOwner = (node: string): string => `mta-${node}-${process.pid}-${crypto.randomBytes(6).toString('hex')}`;

/**
 * At start: rows left `sending` by this node's previous run return to the
 * queue at once (its predecessor is gone). On SQLite that is every `sending`
 * row (one node per database); on PostgreSQL only this node's (lease owner
 * `mta-<node>-…`), since other nodes' leases are alive or lapse by
 * themselves. Delivery is at-least-once, so a message that was on the wire
 * when the process died may be sent again.
 */
export async function releaseStaleLeases(db: Db, now: number, node: string): Promise<number> {
  const ours = db('messages').whereRaw(IN_FLIGHT);
  if (isPostgres(db)) ours.whereIn('lease_owner', await ownLeaseOwners(db, node));
  return ours.update({
    status: db.raw("case when attempts > 0 then 'deferred' else 'queued' end"),
    lease_owner: null,
    lease_expires_at: null,
    updated_at: now,
  });
}

/**
 * This node's lease owners among the `sending` rows. LIKE finds the candidates; the exact shape is checked
 * here, since node ids may hold `-`: node `a`'s pattern `mta-a-%` also matches node `a-2`'s leases.
 */
async function ownLeaseOwners(db: Db, node: string): Promise<string[]> {
  const rows: Array<{ lease_owner: string }> = await db('messages').whereRaw(IN_FLIGHT)
    .where('lease_owner', 'like', `mta-${node.replace(/[\\%_]/g, (c) => `\\${c}`)}-%`).distinct('lease_owner');
  const exact = new RegExp(`^mta-${node.replace(/[.]/g, '\\.')}-\\d+-[0-9a-f]+(\\.\\d+)?$`);
  return rows.map((r) => r.lease_owner).filter((owner) => exact.test(owner));
}

/** Every row (one node that can send everything: tests, benchmarks). */
const everything: SendableScope = () => undefined;

/** Claims up to `limit` due rows this node can send (`sendable`) for `owner` and returns them as jobs. */
export async function claim(
  db: Queryable,
  input: { owner: string; now: number; leaseMs: number; limit: number; dueBy?: number; sendable?: SendableScope },
): Promise<Job[]> {
  const { owner, now, leaseMs, limit } = input;
  const due = db('messages')
    .select('id')
    .where('next_attempt_at', '<=', input.dueBy ?? now)
    .whereIn('status', CLAIMABLE)
    .where((q) => q.whereNull('lease_owner').orWhere('lease_expires_at', '<', now))
    .whereNotIn('recipient_domain', paused(db))
    .modify(input.sendable ?? everything)
    .orderBy('next_attempt_at')
    .limit(limit);
  const lease = { status: 'sending', lease_owner: owner, lease_expires_at: now + leaseMs, updated_at: now };
  const rows = isPostgres(db)
    ? await claimLocked(db, due, lease)
    : await db('messages').whereIn('id', due).update(lease).returning('*');
  return (rows as MessageRow[]).map(toJob);
}

/**
 * PostgreSQL: rows another node is claiming now are skipped instead of waited
 * for (FOR UPDATE SKIP LOCKED). The due rows are picked in a MATERIALIZED CTE,
 * which runs once: as `IN (subquery)` the planner may run the subquery again
 * for every row it updates, and each run skips the rows this statement has
 * already taken and returns the next ones, so one claim took every due row.
 */
function claimLocked(db: Queryable, due: Knex.QueryBuilder, lease: Record<string, unknown>): Promise<unknown[]> {
  return db.withMaterialized('due', due.forUpdate().skipLocked())
    .from('messages')
    .whereIn('id', db.select('id').from('due'))
    .update(lease)
    .returning('*');
}

/**
 * When the worker should look again: the earliest waiting row or expiring lease among the rows this node can
 * send; null when there is none.
 */
export async function nextWakeAt(db: Queryable, sendable: SendableScope = everything): Promise<number | null> {
  const waiting = await db('messages').whereNotNull('next_attempt_at').whereIn('status', WAITING).whereNotIn('recipient_domain', paused(db))
    .modify(sendable).min({ at: 'next_attempt_at' }).first();
  // a row in flight always has next_attempt_at (set at accept and kept by the claim); not asking for it keeps
  // SQLite on messages_sending_idx instead of walking every due row of messages_due_idx
  // a lapsed lease to a paused destination is no claim's: waking for it would claim nothing and look again at once
  const leased = await db('messages').whereRaw(IN_FLIGHT).whereNotIn('recipient_domain', paused(db)).modify(sendable)
    .min({ at: 'lease_expires_at' }).first();
  const times = [waiting?.at, leased?.at].filter((t): t is number => t !== null && t !== undefined).map(Number);
  return times.length ? Math.min(...times) : null;
}

/** Messages still in the queue, by status (rows that left it have next_attempt_at null). */
export async function queueDepth(db: Queryable): Promise<Record<string, number>> {
  const rows: Array<{ status: string; n: number }> = await db('messages').whereNotNull('next_attempt_at').groupBy('status').select('status').count({ n: '*' });
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}

export interface MessageRow {
  id: string;
  account_id: string;
  mode: 'test' | 'live';
  lease_owner: string;
  lease_expires_at: number;
  content_id: string;
  from_email: string;
  to_email: string;
  recipient_domain: string;
  sending_domain: string;
  ip_pool: string | null;
  track_opens: number | boolean;
  track_clicks: number | boolean;
  list_unsubscribe: number | boolean;
  tags: string;
  metadata: string;
  attempts: number;
  created_at: number;
  send_at: number | null;
}

export function toJob(r: MessageRow): Job {
  return {
    id: r.id,
    accountId: r.account_id,
    mode: r.mode,
    leaseOwner: r.lease_owner,
    leaseExpiresAt: Number(r.lease_expires_at),
    contentId: r.content_id,
    fromEmail: r.from_email,
    toEmail: r.to_email,
    recipientDomain: r.recipient_domain,
    sendingDomain: r.sending_domain,
    ipPool: r.ip_pool,
    trackOpens: Boolean(r.track_opens),
    trackClicks: Boolean(r.track_clicks),
    listUnsubscribe: Boolean(r.list_unsubscribe),
    tags: fromJson<string[]>(r.tags, []),
    metadata: fromJson<Record<string, string>>(r.metadata, {}),
    attempts: Number(r.attempts),
    createdAt: Number(r.created_at),
    sendAt: r.send_at === null ? null : Number(r.send_at),
  };
}
