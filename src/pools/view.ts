/** The IP pool record as the API returns it, and the zod schemas that document it in OpenAPI. */
import { z } from 'zod';
import { iso } from '../clock';
import type { Config } from '../config';
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
