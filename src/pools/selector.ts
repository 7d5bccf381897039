/**
 * Source step of the delivery pipeline, as the pools module does it: which
 * address (and EHLO name) of the message's pool a message leaves from, or
 * `wait` (back to the queue, not an attempt) when no address may send it now.
 *
 *   members     → the pool's configured addresses (`default`: all of config `ips`)
 *   family      → keep the addresses whose family (IPv4/IPv6) the MX hosts have
 *   order       → smooth weighted round robin (config `ips[].weight`)
 *   admit       → the first address whose throttle and warm-up budget allow a send now
 *   overflow    → none admitted: the pool's overflow pool, or wait until budget opens
 *
 * After the attempt, `replied` refunds a send that never reached a server and
 * turns throttling replies into cool-downs. Counts of warming addresses are
 * written at once (they are budgets); the others are buffered statistics.
 */
import net from 'node:net';
import type { AppDeps } from '../deps';
import { DEFAULT_POOL, poolMembers, type PoolMember } from './lookup';
import { getOverflow } from './repository';
import { OTHER } from './providers';
import { destinationOf } from './throttle';
import { ipRuntimeFor, type IpRuntime } from './runtime';
import { nextMidnight } from './schedule';

/** What the pipeline knows of the destination when it asks for a source. */
export interface SourceRoute {
  hosts: ReadonlyArray<{ name: string }>;
  addresses(host: string, family: 4 | 6): Promise<{ kind: 'addresses'; addresses: string[] } | { kind: 'none' }>;
}

export interface SourceJob {
  id: string;
  accountId: string;
  ipPool: string | null;
  recipientDomain: string;
}

export type SourcePick = { address: string; hostname: string } | { wait: string; retryAt: number };

export interface SendReply {
  kind: 'delivered' | 'deferred' | 'bounced';
  code: number | null;
  enhancedCode: string | null;
  response: string;
}

/** A pool without a usable address is looked at again after this long. */
const EMPTY_POOL_RETRY_MS = 5 * 60_000;
/** Messages waiting for a warm-up budget come back spread over this long after it opens, not all at once. */
const RETRY_SPREAD_MS = 5 * 60_000;

export class SourceSelector {
  /** smooth weighted round robin state per account and pool */
  private readonly turns = new Map<string, Map<string, number>>();

  constructor(
    private readonly deps: Pick<AppDeps, 'db' | 'config' | 'clock' | 'log'>,
    private readonly ips: IpRuntime,
    private readonly random: () => number = Math.random,
  ) {}

  async pick(job: SourceJob, route: SourceRoute): Promise<SourcePick> {
    const provider = this.ips.providers.of(route.hosts.map((h) => h.name));
    const visited = new Set<string>();
    let pool = job.ipPool || DEFAULT_POOL;
    let earliest = Number.POSITIVE_INFINITY;
    const reasons: string[] = [];
    for (;;) {
      visited.add(pool);
      const result = await this.pickInPool(job, route, pool, provider);
      if ('address' in result) return result;
      earliest = Math.min(earliest, result.retryAt);
      reasons.push(result.wait);
      const overflow = await getOverflow(this.deps.db, job.accountId, pool);
      if (overflow === 'queue' || visited.has(overflow)) break;
      pool = overflow;
    }
    const retryAt = Number.isFinite(earliest) ? earliest : this.deps.clock.now() + EMPTY_POOL_RETRY_MS;
    return { wait: reasons.join('; then '), retryAt };
  }

  private async pickInPool(job: SourceJob, route: SourceRoute, pool: string, provider: string | null): Promise<SourcePick> {
    const now = this.deps.clock.now();
    const members = await poolMembers(this.deps.db, this.deps.config, job.accountId, pool);
    if (members.length === 0) return { wait: `IP pool "${pool}" has no configured address`, retryAt: now + EMPTY_POOL_RETRY_MS };
    const candidates = await byFamily(members, route);
    const key = `${job.accountId} ${pool}`;
    let retryAt = Number.POSITIVE_INFINITY;
    const limits = new Set<string>();
    const ordered = this.order(key, candidates);
    for (const ip of ordered) {
      const admitted = await this.ips.admit({
        jobId: job.id,
        address: ip.address,
        provider,
        destination: destinationOf(provider, job.recipientDomain),
        now,
      });
      if (admitted.ok) {
        this.chosen(key, ip.address, ordered[0].address, candidates);
        return { address: ip.address, hostname: ip.hostname };
      }
      // A budget opens for many waiting messages at once (the next hour, midnight): spread their return.
      // A throttle gap opens for one message, so those come back exactly when it does.
      const spread = admitted.limit === 'throttled' ? 0 : Math.floor(this.random() * RETRY_SPREAD_MS);
      retryAt = Math.min(retryAt, admitted.retryAt + spread);
      limits.add(admitted.limit);
    }
    this.chosen(key, '', ordered[0].address, candidates); // nobody was used: give the booking back
    const toward = provider ?? OTHER;
    const what = [...limits].map((l) => (l === 'throttled' ? 'cooling down after throttling replies' : l === 'provider' ? `at its ${toward} budget` : 'at its warm-up cap')).join(' or ');
    return { wait: `every address of IP pool "${pool}" is ${what} for ${toward} destinations`, retryAt: Number.isFinite(retryAt) ? retryAt : nextMidnight(now) };
  }

  /**
   * Candidates in the order to try them: the smooth weighted round robin's
   * choice first, then the others by their turn. The choice is booked at once
   * (picks run concurrently); `chosen` moves the booking if another was used.
   */
  private order(key: string, candidates: PoolMember[]): PoolMember[] {
    let state = this.turns.get(key);
    if (!state) this.turns.set(key, (state = new Map()));
    for (const c of candidates) state.set(c.address, (state.get(c.address) ?? 0) + c.weight);
    const current = state;
    const sorted = [...candidates].sort((a, b) => (current.get(b.address) ?? 0) - (current.get(a.address) ?? 0));
    const total = candidates.reduce((a, c) => a + c.weight, 0);
    current.set(sorted[0].address, (current.get(sorted[0].address) ?? 0) - total);
    return sorted;
  }

  private chosen(key: string, address: string, preferred: string, candidates: PoolMember[]): void {
    if (address === preferred) return;
    const state = this.turns.get(key);
    const total = candidates.reduce((a, c) => a + c.weight, 0);
    state?.set(preferred, (state.get(preferred) ?? 0) + total);
    if (address) state?.set(address, (state.get(address) ?? 0) - total);
  }

  /** After the attempt: refund a send that reached no server; a throttling reply starts or raises a cool-down. */
  async replied(job: { id: string }, reply: SendReply): Promise<void> {
    await this.ips.settle(job.id, reply);
  }
}

/** The members that can reach the destination: IPv6 sources only for MX hosts with AAAA records, IPv4 for A. */
async function byFamily(members: PoolMember[], route: SourceRoute): Promise<PoolMember[]> {
  const v6 = members.filter((m) => net.isIPv6(m.address));
  if (v6.length === 0 || v6.length === members.length) return members;
  const families = new Set<4 | 6>();
  await Promise.all(
    route.hosts.flatMap((h) =>
      ([4, 6] as const).map(async (family) => {
        if ((await route.addresses(h.name, family)).kind === 'addresses') families.add(family);
      }),
    ),
  );
  const usable = members.filter((m) => families.has(net.isIPv6(m.address) ? 6 : 4));
  return usable.length ? usable : members;
}

const selectors = new WeakMap<object, SourceSelector>();

/**
 * The pools module's source step for the MTA (modules.ts plugs it in):
 * `pickSource` chooses, `sourceSettled` hears how the attempt went (null:
 * nothing was sent, e.g. the message was cancelled meanwhile).
 */
export function poolDeliveryHooks(deps: AppDeps) {
  let selector = selectors.get(deps);
  if (!selector) selectors.set(deps, (selector = new SourceSelector(deps, ipRuntimeFor(deps))));
  const chosen = selector;
  return {
    pickSource: (job: SourceJob, route: SourceRoute) => chosen.pick(job, route),
    sourceSettled: (job: { id: string }, _source: unknown, sent: SendReply | null) =>
      chosen.replied(job, sent ?? { kind: 'deferred', code: null, enhancedCode: null, response: 'nothing was sent' }),
  };
}
