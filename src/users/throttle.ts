/**
 * Sign-in throttling: sign-in attempts are counted per (email, client) and per
 * client address (an IPv6 client by its /64) over a sliding window, each one
 * when it starts (before the password hash), so parallel requests cannot all
 * pass the check before the first failure is counted; a success takes its own
 * count back. At the limit either one answers 429 with Retry-After until the
 * oldest counted attempt leaves the window. Per (email, client) rather than per
 * email, so nobody can lock a user out from elsewhere by failing on purpose;
 * guessing one user's password from many addresses is bounded by the global
 * cap on password hashes at once (routes.ts) and the password rules.
 * In memory on purpose, like the API's failure limiter; each map holds at
 * most MAX_KEYS keys (least recently failed dropped first), each key at most
 * `maxFailures` timestamps.
 */
import type { Clock } from '../clock';
import { rateLimitKey } from '../net/client-key';
import { LruMap } from '../util/lru';
import { normalizeEmail } from './store';

const pairKey = (email: string, client: string): string => `${normalizeEmail(email)} ${rateLimitKey(client)}`;

export class SignInThrottle {
  static readonly MAX_KEYS = 10_000;
  private readonly byEmail = new LruMap<string, number[]>(SignInThrottle.MAX_KEYS);
  private readonly byAddress = new LruMap<string, number[]>(SignInThrottle.MAX_KEYS);

  constructor(
    private readonly clock: Clock,
    private readonly maxFailures: number,
    private readonly windowMs: number,
  ) {}

  /** Keys remembered, both maps together (for tests and the documented bound). */
  get size(): number {
    return this.byEmail.size + this.byAddress.size;
  }

  /** Seconds until a sign-in for this email from this client may be tried, or 0. */
  blockedFor(email: string, client: string): number {
    return Math.max(this.wait(this.byEmail, pairKey(email, client)), this.wait(this.byAddress, rateLimitKey(client)));
  }

  /** Counts an attempt as failed from its start; `recordSuccess` takes it back. */
  recordFailure(email: string, client: string): void {
    this.add(this.byEmail, pairKey(email, client));
    this.add(this.byAddress, rateLimitKey(client));
  }

  /** A successful sign-in clears the pair's count and takes back the address's count of this attempt. */
  recordSuccess(email: string, client: string): void {
    this.byEmail.delete(pairKey(email, client));
    const list = this.byAddress.peek(rateLimitKey(client));
    if (list?.length) list.pop();
  }

  private recent(map: LruMap<string, number[]>, key: string): number[] {
    const cutoff = this.clock.now() - this.windowMs;
    return (map.peek(key) ?? []).filter((t) => t > cutoff);
  }

  private wait(map: LruMap<string, number[]>, key: string): number {
    const list = this.recent(map, key);
    if (list.length < this.maxFailures) return 0;
    return Math.max(1, Math.ceil((list[list.length - this.maxFailures] + this.windowMs - this.clock.now()) / 1000));
  }

  private add(map: LruMap<string, number[]>, key: string): void {
    const list = this.recent(map, key);
    list.push(this.clock.now());
    map.set(key, list.slice(-this.maxFailures));
  }
}
