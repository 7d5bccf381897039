/**
 * Sign-in throttling: failed sign-ins are counted per email address and per
 * client address (an IPv6 client by its /64) over a sliding window; at the
 * limit either one answers 429 with Retry-After until the oldest counted
 * failure leaves the window. Per email stops guessing one user's password
 * from many addresses; per address stops one client trying many users.
 * In memory on purpose, like the API's failure limiter; each map holds at
 * most MAX_KEYS keys (least recently failed dropped first), each key at most
 * `maxFailures` timestamps.
 */
import type { Clock } from '../clock';
import { rateLimitKey } from '../net/client-key';
import { LruMap } from '../util/lru';
import { normalizeEmail } from './store';

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
    return Math.max(this.wait(this.byEmail, normalizeEmail(email)), this.wait(this.byAddress, rateLimitKey(client)));
  }

  recordFailure(email: string, client: string): void {
    this.add(this.byEmail, normalizeEmail(email));
    this.add(this.byAddress, rateLimitKey(client));
  }

  /** A successful sign-in clears the email's count (the address keeps its own). */
  recordSuccess(email: string): void {
    this.byEmail.delete(normalizeEmail(email));
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
