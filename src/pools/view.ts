/** The IP pool record as the API returns it, and the zod schemas that document it in OpenAPI. */
import { z } from 'zod';
import { iso } from '../clock';
import type { Config } from '../config';
import { FCRDNS, type CheckRecord } from '../reputation/store';
import type { PoolBundle, PoolMemberView } from './service';
import { familyOf } from './status';
import { ratePerMinute } from './throttle';

const throttleSchema = z.object({
  destination: z.string().describe('A provider id (gmail, microsoft, yahoo, apple…) or `domain:<recipient domain>` for other destinations.'),
  reason: z.enum(['rate_limited', 'reputation']).describe('What the throttling reply said.'),
  level: z.number().int().describe('1 after the first throttling reply; each further reply during the cool-down raises it (halves the rate).'),
  rate_per_minute: z.number().describe('Messages per minute this IP may send to the destination until the cool-down ends.'),
  max_in_flight: z.number().int().describe('Messages in flight at once from this IP to the destination during the cool-down.'),
  since: z.string().describe('When the cool-down began.'),
  until: z.string().describe('When it ends, unless another throttling reply extends it.'),
  replies: z.number().int().describe('Throttling replies received during this cool-down.'),
  last_reply: z.string().describe('The last throttling reply, as the server sent it.'),
});

const warmupSchema = z.object({
  status: z.enum(['warming', 'paused', 'warm'])
    .describe('warming: capped by its schedule; paused: held at the current day (days do not advance), still capped; warm: no cap (never warmed up, completed, or stopped).'),
  schedule: z.enum(['standard', 'custom']).nullable().describe('The schedule of the last warm-up, null if the IP was never warmed up.'),
  day: z.number().int().nullable().describe('Day N of the schedule that applies today (null when warm).'),
  days: z.number().int().nullable().describe('M, the length of the schedule.'),
  today_cap: z.number().int().nullable().describe('Messages this IP may send today (UTC); null is unlimited.'),
  allowed_by_now: z.number().int().nullable().describe('What the hourly spreading allows by the end of the current UTC hour: today_cap × (hour+1) / 24.'),
  provider_caps: z.record(z.string(), z.number().int()).nullable().describe('Today\'s budget per provider (a share of today_cap); other destinations may use the whole cap.'),
  started_at: z.string().nullable(),
  paused_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  finished_reason: z.enum(['completed', 'stopped']).nullable(),
});

const listingSchema = z.object({
  zone: z.string().describe('The DNSBL zone, e.g. zen.spamhaus.org.'),
  listed: z.boolean().nullable().describe('True while the zone lists the address; null when no lookup has answered yet (see error).'),
  codes: z.array(z.string()).describe('The zone\'s A answers while listed (e.g. 127.0.0.2: what the listing is for).'),
  reason: z.string().nullable().describe('The zone\'s TXT explanation while listed, when it gives one.'),
  since: z.string().describe('When the address became listed (or clear).'),
  checked_at: z.string().describe('The last lookup that answered.'),
  error: z.string().nullable().describe('Why the last lookup did not answer (the state above is the one before), or null.'),
});

const reputationSchema = z.object({
  listings: z.array(listingSchema).describe('One entry per DNSBL zone checked.'),
  fcrdns: z.object({
    ok: z.boolean().nullable().describe('True when the PTR names the address\'s hostname and that name resolves back to it.'),
    detail: z.string().nullable().describe('What the check found, and what to fix.'),
    since: z.string(),
    checked_at: z.string(),
    error: z.string().nullable(),
  }).nullable().describe('Forward-confirmed reverse DNS, null before the first check.'),
}).describe('Extension: the reputation watch\'s last results for this address (empty while reputation.enabled is off or before its first run); see docs/ip-pools.md.');

function shapeReputation(checks: CheckRecord[] = []): z.infer<typeof reputationSchema> {
  const known = (c: CheckRecord) => (c.state === 'unknown' ? null : c.state === 'listed' || c.state === 'ok');
  const times = (c: CheckRecord) => ({ since: iso(c.since) as string, checked_at: iso(c.checkedAt) as string, error: c.error });
  const fcrdns = checks.find((c) => c.check === FCRDNS);
  return {
    listings: checks.filter((c) => c.check !== FCRDNS).map((c) => ({
      zone: c.check, listed: known(c), codes: c.codes, reason: c.state === 'listed' ? c.detail : null, ...times(c),
    })),
    fcrdns: fcrdns ? { ok: known(fcrdns), detail: fcrdns.detail, ...times(fcrdns) } : null,
  };
}

export const poolIpSchema = z.object({
  address: z.string().describe('The source address (as written in config `ips`).'),
  hostname: z.string().nullable().describe('Its EHLO name (and expected PTR); null if the address was removed from config and is skipped.'),
  weight: z.number().int().describe('Relative share of the pool\'s traffic (config `ips[].weight`).'),
  family: z.enum(['ipv4', 'ipv6']).describe('IPv4 sources are used for MX hosts with A records, IPv6 for AAAA.'),
  configured: z.boolean().describe('False when the address is in the pool but no longer in config `ips`, or dedicated to another account since (it is not used).'),
  warmup: warmupSchema.describe('Warm-up state of this IP; shared by every account and pool that uses the IP.'),
  usage_today: z.object({
    date: z.string().describe('The UTC day, YYYY-MM-DD.'),
    total: z.number().int().describe('Messages attempted from this IP today, all accounts.'),
    by_provider: z.record(z.string(), z.number().int()).describe('The same per destination provider (`other` for the rest).'),
  }),
  throttles: z.array(throttleSchema).describe('Cool-downs in force after throttling replies, per destination.'),
  reputation: reputationSchema,
});

export const poolSchema = z.object({
  id: z.string().describe('Identifier, prefix `pool_` (`pool_default` for the default pool); pools are addressed by name in paths.'),
  name: z.string().describe('Unique per account: lower-case letters, digits and hyphens, up to 64.'),
  default: z.boolean().describe('True for the `default` pool: every configured IP, used when a send names no pool.'),
  created_at: z.string().nullable(),
  overflow: z.string().describe('What happens to mail no address of the pool may send now (warm-up cap, throttling): `queue` waits, or the name of the pool that sends it instead.'),
  ips: z.array(poolIpSchema),
});

export type PoolView = z.infer<typeof poolSchema>;

/** One address of a pool as the API shows it (also `pigeon pools list --json`). */
export function shapeIp(config: Config, m: PoolMemberView): PoolView['ips'][number] {
  const w = m.status.warmup;
  return {
    address: m.address,
    hostname: m.hostname,
    weight: m.weight,
    family: familyOf(m.address),
    configured: m.configured,
    warmup: {
      status: w.status,
      schedule: w.schedule,
      day: w.day,
      days: w.days,
      today_cap: w.todayCap,
      allowed_by_now: w.allowedByNow,
      provider_caps: w.providerCaps,
      started_at: iso(w.startedAt),
      paused_at: iso(w.pausedAt),
      finished_at: iso(w.finishedAt),
      finished_reason: w.finishedReason,
    },
    usage_today: { date: m.status.usage.day, total: m.status.usage.total, by_provider: m.status.usage.byProvider },
    throttles: m.status.throttles.map((t) => ({
      destination: t.destination,
      reason: t.reason,
      level: t.level,
      rate_per_minute: ratePerMinute(t.level, config.pools.throttle),
      max_in_flight: config.pools.throttle.connections,
      since: iso(t.since) as string,
      until: iso(t.until) as string,
      replies: t.hits,
      last_reply: t.lastReply,
    })),
    reputation: shapeReputation(m.reputation),
  };
}

export function shapePool(config: Config, p: PoolBundle): PoolView {
  return {
    id: p.id,
    name: p.name,
    default: p.isDefault,
    created_at: iso(p.createdAt),
    overflow: p.overflow,
    ips: p.members.map((m) => shapeIp(config, m)),
  };
}
