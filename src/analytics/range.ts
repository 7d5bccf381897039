/**
 * The query parameters every analytics endpoint shares: the time range (from,
 * to, tz) and the filters (sending domain, tag, IP pool). Dates are ISO 8601;
 * a date without a time is midnight in `tz`, and as `to` it means the end of
 * that day. Rollups are hourly, so the range is aligned to whole UTC hours and
 * the response states the range actually counted.
 */
import { z } from 'zod';
import { badRequest } from '../http/errors';
import type { Mode } from '../auth/scopes';
import { DAY, HOUR } from './rollup';
import { canonicalTimeZone, wallToInstant } from './time';

export const MAX_RANGE_DAYS = 400;
export const DEFAULT_RANGE_DAYS = 7;

/** Query fields shared by every analytics endpoint (validated further by resolveQuery). */
export const rangeQuery = {
  from: z.string().max(40).optional().describe('Start (inclusive), ISO 8601 date or date-time. Default: 7 days before `to`.'),
  to: z.string().max(40).optional()
    .describe('End, ISO 8601. A date-time is exclusive; a date alone includes that whole day. Default: now.'),
  tz: z.string().max(64).default('UTC').describe('IANA time zone for dates without an offset and for day/week buckets (default UTC).'),
  domain: z.string().trim().toLowerCase().min(1).max(253).optional().describe('Only messages from this sending domain.'),
  tag: z.string().min(1).max(100).optional().describe('Only messages carrying this tag.'),
  ip_pool: z.string().min(1).max(100).optional().describe('Only messages sent through this IP pool (`default` when none was chosen).'),
};

export interface RangeQueryInput {
  from?: string;
  to?: string;
  tz: string;
  domain?: string;
  tag?: string;
  ip_pool?: string;
}

/** What to count: one account and mode, a row set (tag or '') and optional filters, over [from, to). */
export interface AnalyticsScope {
  accountId: string;
  mode: Mode;
  /** '' reads the every-message row set. */
  tag: string;
  sendingDomain?: string;
  ipPool?: string;
  /** Hour-aligned UTC ms; `to` is exclusive. */
  from: number;
  to: number;
  tz: string;
}

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?$/i;

function wallTime(y: string, mo: string, d: string, h = '0', mi = '0', s = '0'): number | undefined {
  const [Y, M, D, H, I, S] = [y, mo, d, h, mi, s].map(Number);
  const ms = Date.UTC(Y, M - 1, D, H, I, S);
  const back = new Date(ms);
  const ok = back.getUTCFullYear() === Y && back.getUTCMonth() === M - 1 && back.getUTCDate() === D && H < 24 && I < 60 && S < 60;
  return ok ? ms : undefined;
}

/** An ISO 8601 date or date-time as UTC ms; undefined when it is not one. */
export function parseInstant(value: string, tz: string, endOfDay: boolean): number | undefined {
  const date = DATE_ONLY.exec(value);
  if (date) {
    const wall = wallTime(date[1], date[2], date[3]);
    return wall === undefined ? undefined : wallToInstant(wall + (endOfDay ? DAY : 0), tz);
  }
  const m = DATE_TIME.exec(value);
  if (!m) return undefined;
  const wall = wallTime(m[1], m[2], m[3], m[4], m[5], m[6]);
  if (wall === undefined) return undefined;
  const fraction = m[7] ? Math.floor(Number(`0.${m[7]}`) * 1000) : 0;
  const zone = m[8];
  if (!zone) return wallToInstant(wall, tz) + fraction;
  if (zone.toUpperCase() === 'Z') return wall + fraction;
  const sign = zone[0] === '-' ? -1 : 1;
  const digits = zone.slice(1).replace(':', '');
  const [oh, om] = [Number(digits.slice(0, 2)), Number(digits.slice(2))];
  if (oh > 23 || om > 59) return undefined;
  const offset = sign * (oh * 60 + om) * 60_000;
  return wall - offset + fraction;
}

const invalid = (param: string, message: string) => badRequest('invalid_parameter', `${param}: ${message}`, param);

/** Validates the range and filters; throws 400 naming the parameter. */
export function resolveQuery(q: RangeQueryInput, caller: { accountId: string; mode: Mode }, now: number): AnalyticsScope {
  const tz = canonicalTimeZone(q.tz);
  if (!tz) throw invalid('tz', `unknown time zone '${q.tz}' (use an IANA name such as Europe/Berlin)`);
  const to = q.to === undefined ? now : parseInstant(q.to, tz, true);
  if (to === undefined) throw invalid('to', 'expected an ISO 8601 date (2026-01-31) or date-time (2026-01-31T12:00:00Z)');
  const from = q.from === undefined ? to - DEFAULT_RANGE_DAYS * DAY : parseInstant(q.from, tz, false);
  if (from === undefined) throw invalid('from', 'expected an ISO 8601 date (2026-01-01) or date-time (2026-01-01T00:00:00Z)');
  // A date-time is widened to whole hours. A date's midnight is rounded up, like
  // day buckets: an hour belongs to the day its start falls in (:30 zones).
  const start = (q.from !== undefined && DATE_ONLY.test(q.from) ? Math.ceil : Math.floor)(from / HOUR) * HOUR;
  const end = Math.ceil(to / HOUR) * HOUR;
  if (start >= end) throw invalid('from', 'must be earlier than to');
  if (end - start > MAX_RANGE_DAYS * DAY) throw invalid('from', `the range may span at most ${MAX_RANGE_DAYS} days`);
  return {
    accountId: caller.accountId,
    mode: caller.mode,
    tag: q.tag ?? '',
    sendingDomain: q.domain,
    ipPool: q.ip_pool,
    from: start,
    to: end,
    tz,
  };
}
