/**
 * The whole appliance's queue by destination (recipient domain), and pausing
 * a destination: a paused domain's messages stay in the queue unclaimed (the
 * MTA's claim skips paused_destinations, see delivery/queue.ts) until resumed.
 */
import type { Queryable } from '../db';

/** Destinations listed at most, most waiting first. */
export const DESTINATIONS_MAX = 200;

export interface DestinationRow {
  domain: string;
  queued: number;
  deferred: number;
  oldestAt: number | null;
  paused: boolean;
  lastError: string | null;
}

export async function queueByDestination(db: Queryable): Promise<DestinationRow[]> {
  const rows = (await db('messages').whereNotNull('next_attempt_at').whereIn('status', ['queued', 'scheduled', 'deferred', 'sending'])
    .groupBy('recipient_domain')
    .select('recipient_domain as domain', db.raw('MIN(created_at) AS oldest_at'), db.raw("MAX(CASE WHEN status = 'deferred' THEN updated_at END) AS last_deferred_at"))
    .select(db.raw("SUM(CASE WHEN status = 'deferred' THEN 0 ELSE 1 END) AS queued"), db.raw("SUM(CASE WHEN status = 'deferred' THEN 1 ELSE 0 END) AS deferred"))
    .orderByRaw('COUNT(*) DESC').orderBy('recipient_domain').limit(DESTINATIONS_MAX)) as Array<Record<string, unknown>>;
  const pausedRows: Array<{ domain: string }> = await db('paused_destinations').select('domain').orderBy('domain').limit(DESTINATIONS_MAX);
  const paused = new Set(pausedRows.map((r) => r.domain));
  const errors = await lastErrors(db, rows.filter((r) => r.last_deferred_at !== null).map((r) => [String(r.domain), Number(r.last_deferred_at)]));
  const out: DestinationRow[] = rows.map((r) => ({
    domain: String(r.domain), queued: Number(r.queued), deferred: Number(r.deferred),
    oldestAt: r.oldest_at === null ? null : Number(r.oldest_at), paused: paused.has(String(r.domain)), lastError: errors.get(String(r.domain)) ?? null,
  }));
  // A paused destination with nothing waiting is still listed, so it can be resumed.
  for (const domain of paused) if (!out.some((r) => r.domain === domain)) out.push({ domain, queued: 0, deferred: 0, oldestAt: null, paused: true, lastError: null });
  return out;
}

/** The reply of each destination's most recent deferral, in one query. */
async function lastErrors(db: Queryable, latest: Array<[string, number]>): Promise<Map<string, string>> {
  if (!latest.length) return new Map();
  const rows: Array<{ recipient_domain: string; last_response: string | null }> = await db('messages')
    .whereIn(['recipient_domain', 'updated_at'], latest).where('status', 'deferred').select('recipient_domain', 'last_response');
  return new Map(rows.filter((r) => r.last_response).map((r) => [r.recipient_domain, String(r.last_response).slice(0, 500)]));
}

export async function pauseDestination(db: Queryable, domain: string, userId: string, now: number): Promise<void> {
  await db('paused_destinations').insert({ domain, paused_at: now, paused_by: userId }).onConflict('domain').ignore();
}

export async function resumeDestination(db: Queryable, domain: string): Promise<boolean> {
  return (await db('paused_destinations').where({ domain }).delete()) > 0;
}
