/**
 * Time series from the rollups. A bucket is a run of UTC hours; reading it
 * hour by hour costs 24 rows a day per dimension combination. In a zone whose
 * days are not UTC days (Berlin, New York…) a local day never contains a
 * whole UTC day, but it is nearly one: local day = UTC day D − its hours past
 * the local midnight + the hours before D that the local day starts with.
 * So for every UTC day a bucket overlaps by more than half, the series reads
 * the day row and corrects it with the few hour rows at its edges; a year of
 * Berlin days is 365 day rows and 730 hour rows instead of 8,760 hour rows.
 * The result is exact: the corrections are the same hourly counters.
 */
import type { Queryable } from '../db';
import { Counts, DAY, HOUR, zeroCounts } from './rollup';
import type { AnalyticsScope } from './range';
import type { Bucket } from './time';
import { addInto, rowsOf, SUMS, toCounts } from './queries';

interface Plan {
  /** UTC day → bucket that takes its day row */
  days: Map<number, number>;
  /** UTC hour → (bucket, +1 | −1) contributions of its hour row */
  hours: Map<number, Array<[number, number]>>;
}

function add(plan: Plan, hour: number, bucket: number, sign: number): void {
  const list = plan.hours.get(hour);
  if (list) list.push([bucket, sign]);
  else plan.hours.set(hour, [[bucket, sign]]);
}

/** Which day rows and hour rows make up each bucket (buckets are runs of whole UTC hours). */
export function planSeries(buckets: Bucket[]): Plan {
  const plan: Plan = { days: new Map(), hours: new Map() };
  buckets.forEach((b, i) => {
    for (let day = Math.floor(b.first / DAY) * DAY; day < b.last; day += DAY) {
      const start = Math.max(b.first, day);
      const end = Math.min(b.last, day + DAY);
      if (end - start > DAY / 2) {
        plan.days.set(day, i);
        for (let h = day; h < start; h += HOUR) add(plan, h, i, -1);
        for (let h = end; h < day + DAY; h += HOUR) add(plan, h, i, -1);
      } else {
        for (let h = start; h < end; h += HOUR) add(plan, h, i, 1);
      }
    }
  });
  return plan;
}

const IN_CHUNK = 500;

/** Counts per bucket; `byHour` reads hour rows only (interval=hour). */
export async function readSeries(db: Queryable, scope: AnalyticsScope, buckets: Bucket[], byHour: boolean): Promise<Counts[]> {
  const out = buckets.map(() => zeroCounts());
  if (byHour) {
    const index = new Map(buckets.map((b, i) => [b.first, i]));
    const rows = await rowsOf(db, scope, 'h').andWhere('bucket', '>=', scope.from).andWhere('bucket', '<', scope.to)
      .select('bucket', db.raw(SUMS)).groupBy('bucket');
    for (const row of rows as Array<Record<string, unknown>>) addInto(out[index.get(Number(row.bucket)) as number], toCounts(row));
    return out;
  }
  const plan = planSeries(buckets);
  const days = [...plan.days.keys()];
  if (days.length) {
    const rows = await rowsOf(db, scope, 'd').andWhere('bucket', '>=', Math.min(...days)).andWhere('bucket', '<=', Math.max(...days))
      .select('bucket', db.raw(SUMS)).groupBy('bucket');
    for (const row of rows as Array<Record<string, unknown>>) {
      const i = plan.days.get(Number(row.bucket));
      if (i !== undefined) addInto(out[i], toCounts(row));
    }
  }
  const hours = [...plan.hours.keys()];
  for (let k = 0; k < hours.length; k += IN_CHUNK) {
    const rows = await rowsOf(db, scope, 'h').whereIn('bucket', hours.slice(k, k + IN_CHUNK))
      .select('bucket', db.raw(SUMS)).groupBy('bucket');
    for (const row of rows as Array<Record<string, unknown>>) {
      for (const [i, sign] of plan.hours.get(Number(row.bucket)) ?? []) addInto(out[i], toCounts(row), sign);
    }
  }
  return out;
}
