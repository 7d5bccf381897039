/**
 * Counts events (new connections, reports) per remote address (an IPv6
 * address by its /64, see net/client-key.ts) in fixed
 * one-minute windows, so one sender cannot flood the inbound listener. The
 * map is keyed by an address anyone on the Internet can pick, so it is
 * bounded: at most MAX_TRACKED_ADDRESSES entries, least recently seen evicted
 * first (a Map iterates in insertion order, and every hit re-inserts its key).
 * An evicted address merely starts a fresh window; the memory cannot grow.
 * State is in memory on purpose: it protects this process and resets
 * harmlessly on restart.
 */
import type { Clock } from '../clock';
import { rateLimitKey } from '../net/client-key';

/** 10 000 entries of ~100 bytes: about 1 MB at most per limiter. */
export const MAX_TRACKED_ADDRESSES = 10_000;
const WINDOW_MS = 60_000;

export class ClientRate {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly perMinute: number,
    private readonly maxTracked = MAX_TRACKED_ADDRESSES,
  ) {}

  /** Counts one event for the address; false when the address is over its limit for this minute. */
  take(client: string): boolean {
    const address = rateLimitKey(client);
    const now = this.clock.now();
    const current = this.windows.get(address);
    const window = current && now - current.start < WINDOW_MS ? current : { start: now, count: 0 };
    this.windows.delete(address);
    this.windows.set(address, window);
    if (this.windows.size > this.maxTracked) this.windows.delete(this.windows.keys().next().value as string);
    if (window.count >= this.perMinute) return false;
    window.count++;
    return true;
  }

  /** Seconds until the address's window ends (for the reply text). */
  retryAfterSeconds(client: string): number {
    const window = this.windows.get(rateLimitKey(client));
    return window ? Math.max(1, Math.ceil((window.start + WINDOW_MS - this.clock.now()) / 1000)) : 1;
  }

  get tracked(): number {
    return this.windows.size;
  }
}
