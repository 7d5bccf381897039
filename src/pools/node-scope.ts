/**
 * Which queued messages this node can send, when several nodes share one
 * database (docs/postgres.md "What each node claims"). A source address
 * belongs to the host that has it, so a node takes:
 *
 *   sandbox messages (mode `test`)   → any node: they use no address
 *   the `default` pool (null too)    → a node with an address in `ips` the account may use
 *                                      (a shared one, or one dedicated to that account)
 *   a named pool                     → a node with a member of the pool among those addresses
 *
 * This mirrors `poolMembers` (lookup.ts), which the source step reads: a node
 * claims exactly the messages for which it would find an address. A pool's
 * overflow is not part of the scope: the node that owns the pool's addresses
 * claims the message and follows the overflow among its own addresses (a
 * pool overflowing to a pool that lives only on another node waits for
 * budget instead). Messages of a pool no node has an address of stay queued,
 * unclaimed, until a node with one starts or the pool changes.
 *
 * On PostgreSQL only (mta.ts): SQLite has one node per file, which claims every row as it always did.
 * The claim and nextWakeAt ask in SQL (`sendableHere`, portable EXISTS
 * subqueries correlated on messages.account_id / ip_pool); the hand-off of
 * fresh sends asks in memory (`sendsHere`), through the pools cache.
 */
import type { Knex } from 'knex';
import type { Config } from '../config';
import type { Queryable } from '../db';
import { isShared } from './dedication';
import { DEFAULT_POOL, poolMembers } from './lookup';

/** A condition on the `messages` table of the query it is applied to. */
export type SendableScope = (q: Knex.QueryBuilder) => void;

interface Dedicated {
  address: string;
  account: string;
}

/** The rows of `messages` this node can send, as a where-clause (see the module comment). */
export function sendableHere(config: Pick<Config, 'ips'>): SendableScope {
  const shared = config.ips.filter(isShared).map((ip) => ip.address);
  const dedicated: Dedicated[] = config.ips.filter((ip) => !isShared(ip)).map((ip) => ({ address: ip.address, account: ip.account as string }));
  const owners = [...new Set(dedicated.map((d) => d.account))];
  return (q) =>
    q.where((w) => {
      w.where('messages.mode', 'test');
      if (!config.ips.length) return;
      w.orWhere((d) => {
        d.where((p) => p.whereNull('messages.ip_pool').orWhere('messages.ip_pool', DEFAULT_POOL));
        // Only dedicated addresses here: the default pool is sendable for the accounts they belong to.
        if (!shared.length) d.whereExists((a) => a.select('a.id').from('accounts as a').whereRaw('?? = ??', ['a.id', 'messages.account_id']).whereIn('a.name', owners));
      });
      w.orWhereExists((s) => {
        s.select('m.address').from('ip_pools as p').join('ip_pool_members as m', 'm.pool_id', 'p.id')
          .whereRaw('?? = ??', ['p.account_id', 'messages.account_id']).whereRaw('?? = ??', ['p.name', 'messages.ip_pool'])
          .where((addr: Knex.QueryBuilder) => {
            if (shared.length) addr.whereIn('m.address', shared);
            for (const x of dedicated) addr.orWhere((one: Knex.QueryBuilder) => one.where('m.address', x.address).whereExists((a: Knex.QueryBuilder) => a.select('a.id').from('accounts as a').whereRaw('?? = ??', ['a.id', 'p.account_id']).where('a.name', x.account)));
          });
      });
    });
}

/** What the hand-off knows of an accepted batch: every copy of it shares these. */
export interface SendFacts {
  accountId: string;
  mode: 'test' | 'live';
  ipPool: string | null;
}

/** The same question in memory, for fresh sends (pool members come from the pools cache). */
export async function sendsHere(db: Queryable, config: Pick<Config, 'ips'>, m: SendFacts): Promise<boolean> {
  if (m.mode === 'test') return true;
  if (!config.ips.length) return false;
  return (await poolMembers(db, config, m.accountId, m.ipPool || DEFAULT_POOL)).length > 0;
}
