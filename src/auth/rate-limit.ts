/**
 * Token buckets per API key, and a failure counter per client address that
 * slows down key guessing on the API and on SMTP AUTH alike. State is in
 * memory on purpose: it protects this process and resets harmlessly on restart.
 */
import type { Clock } from '../clock';

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
    if (this.buckets.size > 100_000) this.buckets.clear(); // bound memory under key churn
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

/** Counts failed authentications per address over a sliding minute. */
export class AuthFailureLimiter {
  private readonly failures = new Map<string, number[]>();

  constructor(
    private readonly clock: Clock,
    private readonly perMinute: number,
  ) {}

  private recent(address: string): number[] {
    const cutoff = this.clock.now() - 60_000;
    const list = (this.failures.get(address) ?? []).filter((t) => t > cutoff);
    if (list.length) this.failures.set(address, list);
    else this.failures.delete(address);
    return list;
  }

  /** Seconds to wait before this address may try again, or 0. */
  blockedFor(address: string): number {
    const list = this.recent(address);
    if (list.length < this.perMinute) return 0;
    return Math.max(1, Math.ceil((list[0] + 60_000 - this.clock.now()) / 1000));
  }

  recordFailure(address: string): void {
    const list = this.recent(address);
    list.push(this.clock.now());
    this.failures.set(address, list);
  }
}
