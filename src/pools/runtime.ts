/**
 * The per-process side of the IP state: admitting one send from one address
 * (throttle gap and connections, warm-up budget), settling it after the
 * attempt, and the caches that keep warm, unthrottled addresses free of
 * database work. The database stays the truth: caches only skip work that
 * would be refused anyway, and are dropped whenever the state changes here.
 */
import { performance } from 'node:perf_hooks';
import { cacheRegistry } from '../util/read-cache';
import type { AppDeps } from '../deps';
import { Reservations, type Limit } from './budget';
import { activeThrottles, addUsage, getThrottle, getWarmups, saveThrottle, type Throttle, type Warmup } from './ip-state';
import { createPoolMetrics, type PoolMetrics } from './metrics';
import { createProviderMatcher, OTHER, type ProviderMatcher } from './providers';
import { utcDay } from './schedule';
import { escalate, intervalMs } from './throttle';
import { createThrottleMatcher, type ThrottleMatcher } from './throttle-rules';

type Deps = Pick<AppDeps, 'db' | 'config' | 'clock' | 'log' | 'metrics'>;

export interface Admission {
  jobId: string;
  address: string;
  provider: string | null;
  destination: string;
  now: number;
}

export type { Limit };
export type Admitted = { ok: true } | { ok: false; retryAt: number; limit: Limit };

/** A send admitted and not yet settled. */
interface Held {
  address: string;
  destination: string;
  day: string;
  usageKey: string;
  capped: boolean;
  at: number;
}

/** Its name among the app's shared caches (util/read-cache.ts). */
export const IP_STATE_CACHE = 'ip-state';

/** How long cached warm-up and throttle rows are trusted (real time: a fake clock must not freeze them). */
const CACHE_MS = 2_000;

export class IpRuntime {
  readonly providers: ProviderMatcher;
  readonly throttleOf: ThrottleMatcher;
  readonly metrics: PoolMetrics;
  private warmups: { rows: Map<string, Warmup>; at: number } | null = null;
  private throttles: { rows: Map<string, Throttle>; at: number } | null = null;
  /** refusals that stand until a time: `b|address|provider` (budget) and `t|address|destination` (throttle) */
  private readonly refused = new Map<string, { until: number; limit: Limit }>();
  private readonly held = new Map<string, Held>();
  /** statistics of uncapped addresses not yet written: `address|day|provider` → n */
  private pending = new Map<string, number>();
  /** writes of `pending` begun (consistentRead) and the one in flight, settled either way */
  private flushes = 0;
  private flushing: Promise<void> = Promise.resolve();
  private readonly reservations: Reservations;

  constructor(private readonly deps: Deps) {
    this.providers = createProviderMatcher(deps.config.pools.providerMxFile);
    this.throttleOf = createThrottleMatcher(deps.config.pools.throttleRulesFile);
    this.metrics = createPoolMetrics(deps);
    this.reservations = new Reservations(deps.db, deps.config);
    cacheRegistry(deps.db).add(IP_STATE_CACHE, this);
  }

  /** May this address send this message now? If so the send is counted and held until settle(). */
  async admit(a: Admission): Promise<Admitted> {
    const { address, destination, now } = a;
    const usageKey = a.provider ?? OTHER;
    const warmup = (await this.warmupRows()).get(address);
    const cached = this.refusal(`b|${address}|*`, now) ?? this.refusal(`b|${address}|${usageKey}`, now) ?? this.refusal(`t|${address}|${destination}`, now);
    if (cached) return cached;
    const throttle = (await this.throttleRows()).get(`${address} ${destination}`);
    const cooling = throttle && throttle.until > now ? throttle : undefined;
    if (cooling && this.inFlight(address, destination, now) >= this.deps.config.pools.throttle.connections) {
      return this.refuse(`t|${address}|${destination}`, Math.max(cooling.nextSendAt, now + intervalMs(cooling.level, this.deps.config.pools.throttle)), 'throttled', false);
    }
    const day = utcDay(now);
    if (!cooling && (!warmup || warmup.status === 'warm')) {
      this.count(address, day, usageKey, 1);
      this.hold(a.jobId, { address, destination, day, usageKey, capped: false, at: now });
      return { ok: true };
    }
    const answer = await this.reservations.reserve({ address, provider: a.provider, destination, now });
    if (!answer.ok) {
      const key = answer.limit === 'daily' ? `b|${address}|*` : answer.limit === 'provider' ? `b|${address}|${usageKey}` : `t|${address}|${destination}`;
      return this.refuse(key, answer.retryAt, answer.limit, true);
    }
    if (!answer.capped) {
      // the warm-up ended with this send's day (its last day is done): from now on the address is uncapped
      if (warmup && warmup.status !== 'warm') this.forget();
      this.count(address, day, usageKey, 1);
    }
    this.hold(a.jobId, { address, destination, day, usageKey, capped: answer.capped, at: now });
    return { ok: true };
  }

  /** After the attempt: a send that reached no server is refunded; a throttling reply cools the address down. */
  async settle(jobId: string, reply: { kind: string; code: number | null; enhancedCode: string | null; response: string }): Promise<void> {
    const held = this.held.get(jobId);
    if (!held) return;
    this.held.delete(jobId);
    if (reply.code === null && reply.kind !== 'delivered') {
      if (held.capped) {
        await addUsage(this.deps.db, held.address, held.day, held.usageKey, -1);
        this.refused.delete(`b|${held.address}|*`);
        this.refused.delete(`b|${held.address}|${held.usageKey}`);
      } else {
        this.count(held.address, held.day, held.usageKey, -1);
      }
      return;
    }
    const reason = this.throttleOf(reply);
    if (reason) await this.cool(held.address, held.destination, reason, reply.response);
  }

  private async cool(address: string, destination: string, reason: NonNullable<ReturnType<ThrottleMatcher>>, reply: string): Promise<void> {
    const now = this.deps.clock.now();
    const next = await this.deps.db.transaction(async (trx) => {
      const t = escalate(await getThrottle(trx, address, destination), { address, destination, reason, reply, now }, this.deps.config.pools.throttle);
      await saveThrottle(trx, t);
      return t;
    });
    this.throttles?.rows.set(`${address} ${destination}`, next);
    this.refused.delete(`t|${address}|${destination}`);
    this.metrics.throttleReplies.inc({ address, destination, reason });
    this.deps.log.warn(
      { address, destination, reason, level: next.level, until: new Date(next.until).toISOString(), reply: next.lastReply },
      'throttling reply: slowing this IP toward this destination',
    );
  }

  /** After the API changed warm-up state: drop every cached row and refusal, here and on the other nodes. */
  invalidate(): void {
    this.forget();
    cacheRegistry(this.deps.db).publish(IP_STATE_CACHE);
  }

  /** Drop every cached row and refusal here (news from another node applies this too). */
  forget(): void {
    this.warmups = null;
    this.throttles = null;
    this.refused.clear();
  }

  /** Counts of uncapped addresses not yet written (for reads that must include them). */
  pendingUsage(address: string, day: string): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [key, n] of this.pending) {
      const [a, d, provider] = key.split('|');
      if (a === address && d === day) out[provider] = (out[provider] ?? 0) + n;
    }
    return out;
  }

  /** Resolves when every admitted send has been settled, or after timeoutMs (at shutdown, before the last flush). */
  async drained(timeoutMs: number): Promise<void> {
    const end = performance.now() + timeoutMs;
    while (this.held.size > 0 && performance.now() < end) await new Promise((r) => setTimeout(r, 20));
  }

  /**
   * Runs `read`, a read of the usage table that adds pendingUsage at its end, so that each send is counted once:
   * a batch being written is in neither the table (not committed) nor `pending` (taken). So the read waits for
   * a write in flight, and runs again (twice at most) when one began meanwhile.
   */
  async consistentRead<T>(read: () => Promise<T>): Promise<T> {
    for (let tries = 0; ; tries++) {
      await this.flushing;
      const seen = this.flushes;
      const result = await read();
      if (seen === this.flushes || tries >= 2) return result;
    }
  }

  /** Writes buffered statistics in one transaction; forgets holds older than a queue lease. */
  async flush(): Promise<void> {
    const leaseMs = this.deps.config.delivery.leaseSeconds * 1000;
    const now = this.deps.clock.now();
    for (const [id, h] of this.held) if (h.at < now - leaseMs) this.held.delete(id);
    if (this.pending.size === 0) return;
    const written = this.write(this.pending);
    this.pending = new Map();
    this.flushes++;
    this.flushing = written.then(() => undefined, () => undefined);
    return written;
  }

  private async write(batch: Map<string, number>): Promise<void> {
    try {
      await this.deps.db.transaction(async (trx) => {
        for (const [key, n] of batch) {
          const [address, day, provider] = key.split('|');
          await addUsage(trx, address, day, provider, n);
        }
      });
    } catch (err) {
      for (const [key, n] of batch) this.pending.set(key, (this.pending.get(key) ?? 0) + n);
      throw err;
    }
  }

  private count(address: string, day: string, provider: string, n: number): void {
    const key = `${address}|${day}|${provider}`;
    this.pending.set(key, (this.pending.get(key) ?? 0) + n);
  }

  private hold(jobId: string, h: Held): void {
    this.held.set(jobId, h);
  }

  private inFlight(address: string, destination: string, now: number): number {
    const leaseMs = this.deps.config.delivery.leaseSeconds * 1000;
    let n = 0;
    for (const h of this.held.values()) if (h.address === address && h.destination === destination && h.at >= now - leaseMs) n++;
    return n;
  }

  private refusal(key: string, now: number): Admitted | undefined {
    const r = this.refused.get(key);
    if (!r) return undefined;
    if (r.until <= now) {
      this.refused.delete(key);
      return undefined;
    }
    return { ok: false, retryAt: r.until, limit: r.limit };
  }

  private refuse(key: string, until: number, limit: Limit, remember: boolean): Admitted {
    if (remember) this.refused.set(key, { until, limit });
    this.metrics.refusals.inc({ limit });
    return { ok: false, retryAt: until, limit };
  }

  /**
   * Warm-up rows, read again every CACHE_MS. They also change outside this
   * process (the operator's `pigeon pools warmup`): when a reload differs,
   * budget refusals standing until a later hour or midnight are dropped, so
   * such a change applies to new sends within seconds.
   */
  private async warmupRows(): Promise<Map<string, Warmup>> {
    if (!this.warmups || performance.now() - this.warmups.at > CACHE_MS) {
      const rows = await getWarmups(this.deps.db);
      if (this.warmups && versionOf(this.warmups.rows) !== versionOf(rows)) {
        for (const key of this.refused.keys()) if (key.startsWith('b|')) this.refused.delete(key);
      }
      this.warmups = { rows, at: performance.now() };
    }
    return this.warmups.rows;
  }

  private async throttleRows(): Promise<Map<string, Throttle>> {
    if (!this.throttles || performance.now() - this.throttles.at > CACHE_MS) {
      const rows = await activeThrottles(this.deps.db, this.deps.clock.now());
      this.throttles = { rows: new Map(rows.map((t) => [`${t.address} ${t.destination}`, t])), at: performance.now() };
    }
    return this.throttles.rows;
  }
}

/** Changes whenever any warm-up row is written (every write sets updatedAt). */
const versionOf = (rows: Map<string, Warmup>): string => [...rows.values()].map((w) => `${w.address} ${w.status} ${w.updatedAt}`).sort().join('|');

const runtimes = new WeakMap<object, IpRuntime>();

/** One runtime per app: the routes, the selector and the worker share it. */
export function ipRuntimeFor(deps: Deps): IpRuntime {
  let r = runtimes.get(deps);
  if (!r) runtimes.set(deps, (r = new IpRuntime(deps)));
  return r;
}
