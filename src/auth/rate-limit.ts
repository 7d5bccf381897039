/**
 * Token buckets per API key, and a failure counter per client address that
 * slows down key guessing on the API and on SMTP AUTH alike. State is in
 * memory on purpose: it protects this process and resets harmlessly on restart.
 */
import type { Clock } from '../clock';
import { rateLimitKey } from '../net/client-key';
import { LruMap } from '../util/lru';

export interface BucketState {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the bucket is full again. */
  resetSeconds: number;
  /** Seconds until one request is allowed (when refused). */
  retryAfterSeconds: number;
  windowSeconds: number;
}

export class TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly ratePerSecond: number,
    private readonly burst: number,
  ) {}

  take(key: string): BucketState {
    const now = this.clock.now();
    const b = this.buckets.get(key) ?? { tokens: this.burst, at: now };
    b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.ratePerSecond);
    b.at = now;
    const allowed = b.tokens >= 1;
    if (allowed) b.tokens -= 1;
    this.buckets.set(key, b);
    // Bounded: keyed by the ids of keys that authenticated (never by what a caller sends),
    // and cleared at 100,000 ids under key churn.
    if (this.buckets.size > 100_000) this.buckets.clear();
    return {
      allowed,
      limit: this.burst,
      remaining: Math.floor(b.tokens),
      resetSeconds: Math.ceil((this.burst - b.tokens) / this.ratePerSecond),
      retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - b.tokens) / this.ratePerSecond)),
      windowSeconds: Math.ceil(this.burst / this.ratePerSecond),
    };
  }
}

/**
 * Counts failed authentications per client address (an IPv6 client by its
 * /64, see net/client-key.ts) over a sliding minute. Only
 * failures are throttled: a valid key still works from a throttled address
 * (a neighbour behind the same NAT guessing keys must not lock out the real
 * client), while every invalid key from it is refused without counting.
 */
export class AuthFailureLimiter {
  static readonly MAX_ADDRESSES = 10_000;
  // Bounded: at most MAX_ADDRESSES addresses (least recently failed dropped first), each
  // holding at most `perMinute` timestamps; expired ones are swept once a minute.
  private readonly failures = new LruMap<string, number[]>(AuthFailureLimiter.MAX_ADDRESSES);
  private sweptAt = 0;

  constructor(
    private readonly clock: Clock,
    private readonly perMinute: number,
  ) {}

  /** How many addresses are remembered (for tests and the docs' bound). */
  get size(): number {
    return this.failures.size;
  }

  private recent(address: string): number[] {
    const cutoff = this.clock.now() - 60_000;
    const list = (this.failures.get(address) ?? []).filter((t) => t > cutoff);
    if (!list.length) this.failures.delete(address);
    return list;
  }

  /** Seconds to wait before this address may fail again, or 0. */
  blockedFor(client: string): number {
    const list = this.recent(rateLimitKey(client));
    if (list.length < this.perMinute) return 0;
    return Math.max(1, Math.ceil((list[list.length - this.perMinute] + 60_000 - this.clock.now()) / 1000));
  }

  recordFailure(client: string): void {
    const address = rateLimitKey(client);
    const list = this.recent(address);
    list.push(this.clock.now());
    // Only the newest perMinute failures decide when the block lifts.
    this.failures.set(address, list.slice(-this.perMinute));
    this.sweepEveryMinute();
  }

  /** Drops addresses whose failures have all expired; at most once a minute, so a flood costs O(1) per failure. */
  private sweepEveryMinute(): void {
    const now = this.clock.now();
    if (now - this.sweptAt < 60_000) return;
    this.sweptAt = now;
    const cutoff = now - 60_000;
    for (const address of [...this.failures.keys()]) {
      const list = this.failures.peek(address);
      if (list && list[list.length - 1] <= cutoff) this.failures.delete(address);
    }
  }
}
