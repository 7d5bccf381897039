/**
 * Source step of the pipeline: which configured address (and EHLO name) a
 * message leaves from. This default picks round-robin, weighted by `weight`,
 * among the members of the message's pool: `default` is every address in
 * config `ips`; a named pool is its rows in `ip_pool_members` that are still
 * configured. The IP pools module (warm-up caps, overflow) replaces this step
 * through the same `PickSource` signature; a `wait` answer puts the message
 * back in the queue without counting an attempt. The step runs after MX
 * resolution, so a picker can look at the destination (`SourceRoute`), and
 * `SourceSettled` tells it how the attempt from its address went.
 */
import type { Clock } from '../clock';
import type { Config } from '../config';
import { LruMap } from '../util/lru';
import type { Queryable } from '../db';
import { DEFAULT_POOL } from '../pools/lookup';
import type { Job, SmtpOutcome, Source, SourceChoice, SourceRoute } from './types';

export type PickSource = (job: Job, route: SourceRoute) => Promise<SourceChoice>;

/** After the transmit step: `sent` is what the server said, or null when nothing was sent (row no longer ours, or a bug). */
export type SourceSettled = (job: Job, source: Source, sent: SmtpOutcome | null) => Promise<void>;

export const nothingToSettle: SourceSettled = async () => {};

/** A pool without a usable address is checked again after this long. */
const EMPTY_POOL_RETRY_MS = 5 * 60_000;

export function createSourcePicker(deps: { db: Queryable; config: Config; clock: Clock }): PickSource {
  // Round-robin position per account and pool: at most 10,000 (a forgotten one restarts at the first address).
  const turns = new LruMap<string, number>(10_000);
  return async (job) => {
    const pool = job.ipPool || DEFAULT_POOL;
    const members = pool === DEFAULT_POOL ? deps.config.ips : await poolMembers(deps.db, deps.config, job.accountId, pool);
    if (members.length === 0) {
      return { wait: `IP pool "${pool}" has no configured address`, retryAt: deps.clock.now() + EMPTY_POOL_RETRY_MS };
    }
    const wheel = members.flatMap((m) => Array<Source>(m.weight ?? 1).fill({ address: m.address, hostname: m.hostname }));
    const key = `${job.accountId} ${pool}`;
    const turn = turns.get(key) ?? 0;
    turns.set(key, (turn + 1) % wheel.length);
    return wheel[turn % wheel.length];
  };
}

async function poolMembers(db: Queryable, config: Config, accountId: string, pool: string): Promise<Config['ips']> {
  const rows: Array<{ address: string }> = await db('ip_pool_members as m')
    .join('ip_pools as p', 'p.id', 'm.pool_id')
    .where({ 'p.account_id': accountId, 'p.name': pool })
    .select('m.address');
  const addresses = new Set(rows.map((r) => r.address));
  return config.ips.filter((ip) => addresses.has(ip.address));
}
