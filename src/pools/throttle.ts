/**
 * Cool-downs: after a reply that means "too fast" or "bad reputation", the IP
 * that got it is slowed toward that destination — a lower rate (a minimum
 * gap between messages, kept in the database) and fewer messages in flight —
 * until the cool-down ends. Further replies during a cool-down raise its
 * level: each level halves the rate and doubles the cool-down.
 */
import type { Config } from '../config';
import type { Throttle } from './ip-state';
import type { ThrottleReason } from './throttle-rules';

export type ThrottleConfig = Config['pools']['throttle'];

export const MAX_LEVEL = 5;
/** Replies closer together than this (parallel messages hitting one wall) raise the level only once. */
const ESCALATION_GAP_MS = 60_000;

export function ratePerMinute(level: number, cfg: ThrottleConfig): number {
  return cfg.messagesPerMinute / 2 ** (level - 1);
}

/** The minimum gap between two messages from one IP to one destination at this level. */
export function intervalMs(level: number, cfg: ThrottleConfig): number {
  return Math.ceil(60_000 / ratePerMinute(level, cfg));
}

function cooldownMs(level: number, cfg: ThrottleConfig): number {
  return Math.min(cfg.cooldownMinutes * 2 ** (level - 1), cfg.maxCooldownMinutes) * 60_000;
}

export interface ThrottleHit {
  address: string;
  destination: string;
  reason: ThrottleReason;
  reply: string;
  now: number;
}

/** The throttle after one more throttling reply. */
export function escalate(prev: Throttle | undefined, hit: ThrottleHit, cfg: ThrottleConfig): Throttle {
  const { now } = hit;
  const active = prev !== undefined && prev.until > now;
  const level = !active ? 1 : now - prev.lastHitAt >= ESCALATION_GAP_MS ? Math.min(prev.level + 1, MAX_LEVEL) : prev.level;
  return {
    address: hit.address,
    destination: hit.destination,
    level,
    reason: hit.reason,
    lastReply: hit.reply.slice(0, 500),
    hits: active ? prev.hits + 1 : 1,
    since: active ? prev.since : now,
    lastHitAt: now,
    until: Math.max(active ? prev.until : 0, now + cooldownMs(level, cfg)),
    nextSendAt: Math.max(active ? prev.nextSendAt : 0, now + intervalMs(level, cfg)),
  };
}

/** The destination a throttle applies to: the provider, or the recipient domain for everyone else. */
export function destinationOf(provider: string | null, recipientDomain: string): string {
  return provider ?? `domain:${recipientDomain.toLowerCase()}`;
}
