/**
 * Time zones without a library: Intl tells us a zone's UTC offset at any
 * instant, and everything else is arithmetic on local "wall" milliseconds
 * (the local date and time written as if it were UTC). Rollups are hourly, so
 * buckets are unions of whole UTC hours: exact for every zone whose offset is a
 * whole number of hours (DST included); in zones with :30/:45 offsets a local
 * day starts at the first whole UTC hour inside it.
 */
import { LruMap } from '../util/lru';
import { DAY, HOUR } from './rollup';

// Keyed by canonical zone name ('Europe/Berlin', never 'europe/BERLIN'), so case
// variants share one entry; bounded at 64 zones (~20 KB each), least recently used out.
const formatters = new LruMap<string, Intl.DateTimeFormat>(64);

const newFormatter = (tz: string): Intl.DateTimeFormat =>
  new Intl.DateTimeFormat('en-US', {
    timeZone: tz, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric',
  });

function formatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz);
  if (!f) {
    f = newFormatter(tz);
    formatters.set(f.resolvedOptions().timeZone, f);
  }
  return f;
}

/**
 * The canonical name of an IANA zone this runtime knows ('europe/berlin' →
 * 'Europe/Berlin', 'utc' → 'UTC'), or undefined. Callers keep the canonical
 * name, so every later lookup hits the cache.
 */
export function canonicalTimeZone(tz: string): string | undefined {
  if (!tz || tz.length > 64) return undefined;
  try {
    return newFormatter(tz).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

/** True for an IANA zone name this runtime knows ('UTC', 'Europe/Berlin'…). */
export function isTimeZone(tz: string): boolean {
  return canonicalTimeZone(tz) !== undefined;
}

/** How many zones have a cached formatter (at most 64). */
export const cachedTimeZones = (): number => formatters.size;

/** Offset of `tz` from UTC at instant `ms`, in ms (local = utc + offset). */
export function offsetAt(ms: number, tz: string): number {
  const parts: Record<string, number> = {};
  for (const p of formatter(tz).formatToParts(new Date(ms))) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  const wall = Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute, parts.second);
  return wall - (ms - (((ms % 1000) + 1000) % 1000));
}

/**
 * The instant of a local wall time. Ambiguous times (the repeated hour when
 * clocks go back) take the earlier instant; times that do not exist (skipped
 * when clocks go forward) move forward by the length of the gap, so a skipped
 * midnight becomes the first instant of that day.
 */
export function wallToInstant(wall: number, tz: string): number {
  const before = wall - offsetAt(wall - DAY, tz);
  const after = wall - offsetAt(wall + DAY, tz);
  const valid = [before, after].filter((c) => offsetAt(c, tz) === wall - c);
  return valid.length ? Math.min(...valid) : Math.max(before, after);
}

/** ISO 8601 with the zone's offset at that instant, e.g. 2026-03-29T00:00:00+01:00. */
export function localIso(ms: number, tz: string): string {
  return formatLocal(ms, offsetAt(ms, tz));
}

/**
 * ISO 8601 of an instant with a known offset. Offsets with seconds (local mean
 * time before ~1900, Africa/Monrovia until 1972) are written ±hh:mm:ss, as
 * Temporal does, rather than as a fraction of a minute.
 */
export function formatLocal(ms: number, off: number): string {
  const sign = off < 0 ? '-' : '+';
  const abs = Math.round(Math.abs(off) / 1000);
  const two = (n: number) => String(n).padStart(2, '0');
  const seconds = abs % 60 ? `:${two(abs % 60)}` : '';
  return `${new Date(ms + off).toISOString().slice(0, 19)}${sign}${two(Math.floor(abs / 3600))}:${two(Math.floor(abs / 60) % 60)}${seconds}`;
}

/**
 * The zone's offset for every hour in [from, to), found with one Intl call per
 * day plus a short search around each transition instead of one per hour.
 */
export function hourlyOffsets(from: number, to: number, tz: string): number[] {
  const out: number[] = [];
  let hour = from;
  let off = offsetAt(hour, tz);
  while (hour < to) {
    const next = Math.min(hour + DAY, to);
    let changed = next - HOUR;
    if (offsetAt(changed, tz) === off) {
      changed = next;
    } else {
      // A transition in (hour, next): bisect to the first hour with the new offset.
      let same = hour;
      while (changed - same > HOUR) {
        const mid = same + Math.floor((changed - same) / HOUR / 2) * HOUR;
        if (offsetAt(mid, tz) === off) same = mid;
        else changed = mid;
      }
    }
    for (; hour < changed; hour += HOUR) out.push(off);
    if (hour < to) off = offsetAt(hour, tz);
  }
  return out;
}

export type Interval = 'hour' | 'day' | 'week';

export interface Bucket {
  /** Nominal start and end of the bucket in the zone (UTC ms), with the zone's offset at each. */
  start: number;
  end: number;
  startOffset: number;
  endOffset: number;
  /** First and last+1 UTC hour of the bucket that lie inside the range. */
  first: number;
  last: number;
}

/** Local day number (days since 1970-01-01 in the zone) of a wall time. */
const dayNumber = (wall: number): number => Math.floor(wall / DAY);
/** Weeks start on Monday: 1970-01-05 (day 4) began week 1. */
const weekNumber = (day: number): number => Math.floor((day + 3) / 7);

interface Group {
  key: number;
  first: number;
  last: number;
  firstOffset: number;
}

/** The buckets covering the hour-aligned range [from, to), in order, empty ones included. */
export function buildBuckets(from: number, to: number, interval: Interval, tz: string): Bucket[] {
  const offsets = hourlyOffsets(from, to, tz);
  const groups: Group[] = [];
  offsets.forEach((off, i) => {
    const hour = from + i * HOUR;
    const day = dayNumber(hour + off);
    const key = interval === 'hour' ? hour : interval === 'day' ? day : weekNumber(day);
    const current = groups[groups.length - 1];
    if (current && current.key === key) current.last = hour + HOUR;
    else groups.push({ key, first: hour, last: hour + HOUR, firstOffset: off });
  });
  const starts = groups.map((g, i) => nominalStart(g, i === 0, interval, tz));
  const lastKey = groups.length ? groups[groups.length - 1].key : 0;
  const endWall = interval === 'hour' ? NaN : (interval === 'day' ? lastKey + 1 : (lastKey + 1) * 7 - 3) * DAY;
  const end = interval === 'hour' ? lastKey + HOUR : wallToInstant(endWall, tz);
  const final = { at: end, offset: offsetAt(end, tz) };
  return groups.map((g, i) => {
    const next = starts[i + 1] ?? final;
    return { start: starts[i].at, startOffset: starts[i].offset, end: next.at, endOffset: next.offset, first: g.first, last: g.last };
  });
}

/**
 * Where a bucket nominally starts. A bucket that begins inside the range starts
 * at local midnight of its first hour's date, known from that hour's offset;
 * the clipped first bucket, and a midnight lost in a DST gap, ask Intl.
 */
function nominalStart(g: Group, clipped: boolean, interval: Interval, tz: string): { at: number; offset: number } {
  if (interval === 'hour') return { at: g.key, offset: g.firstOffset };
  const wall = (interval === 'day' ? g.key : g.key * 7 - 3) * DAY;
  const guess = wall - g.firstOffset;
  if (!clipped && guess <= g.first && guess > g.first - HOUR) return { at: guess, offset: g.firstOffset };
  const at = wallToInstant(wall, tz);
  return { at, offset: offsetAt(at, tz) };
}
