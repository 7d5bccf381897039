/**
 * Warm-up arithmetic, free of storage: the standard schedule, UTC days, the
 * hourly spreading of a day's cap, and how a warm-up moves from one day to
 * the next. Everything takes times in ms so a fake clock drives it in tests.
 */

/** Daily caps of the standard schedule: 50 a day, roughly doubling every two days, unlimited from day 31. */
export const STANDARD_SCHEDULE: readonly number[] = [
  50, 100, 200, 300, 500, 750, 1_000, 1_500, 2_000, 3_000,
  4_000, 5_000, 7_500, 10_000, 15_000, 20_000, 25_000, 30_000, 40_000, 50_000,
  60_000, 75_000, 100_000, 125_000, 150_000, 200_000, 250_000, 300_000, 400_000, 500_000,
];

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;

/** The UTC calendar day of a time: 'YYYY-MM-DD'. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

export function nextMidnight(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS + DAY_MS;
}

/** Hours since midnight UTC, 0..23. */
export function utcHour(ms: number): number {
  return Math.floor((ms % DAY_MS) / HOUR_MS);
}

/**
 * How much of a daily budget may have been used by the end of the current
 * hour: budget·(h+1)/24, rounded down, so the day's budget is spread evenly
 * and nothing bursts at midnight. At hour 23 it is the whole budget.
 */
export function hourlyAllowance(budget: number, ms: number): number {
  return Math.floor((budget * (utcHour(ms) + 1)) / 24);
}

/**
 * The first time, from `ms` on, at which the allowance of `budget` exceeds
 * `used`: the start of a later hour today, or the next midnight when today's
 * budget is spent (tomorrow's budget is decided then).
 */
export function allowanceOpensAt(budget: number, used: number, ms: number): number {
  const dayStart = Math.floor(ms / DAY_MS) * DAY_MS;
  for (let h = utcHour(ms) + 1; h < 24; h++) {
    if (Math.floor((budget * (h + 1)) / 24) > used) return dayStart + h * HOUR_MS;
  }
  return dayStart + DAY_MS;
}

export type WarmupStatus = 'warming' | 'paused' | 'warm';

export interface WarmupProgress {
  status: WarmupStatus;
  schedule: readonly number[];
  /** 0-based index into schedule: day N of M is dayIndex+1 of schedule.length */
  dayIndex: number;
  /** the UTC day the current dayIndex was first used for sending; null before any */
  dayDate: string | null;
}

/**
 * The warm-up as it stands on `today`. Days are UTC calendar days of actual
 * sending: when today is later than the last sending day, the warm-up moves
 * one day on, but only if that day used at least half its cap and the
 * warm-up is not paused. Moving past the last day makes the IP warm.
 */
export function rollForward(w: WarmupProgress, today: string, usedOnDayDate: number): WarmupProgress {
  if (w.status === 'warm' || w.dayDate === today) return w;
  if (w.dayDate === null || w.dayDate > today) return { ...w, dayDate: today };
  const cap = w.schedule[w.dayIndex] ?? 0;
  const advance = w.status === 'warming' && usedOnDayDate * 2 >= cap;
  if (!advance) return { ...w, dayDate: today };
  const dayIndex = w.dayIndex + 1;
  if (dayIndex >= w.schedule.length) return { ...w, status: 'warm', dayIndex, dayDate: today };
  return { ...w, dayIndex, dayDate: today };
}

/** Today's cap of a warm-up that has been rolled forward to today; null means unlimited. */
export function capOf(w: WarmupProgress): number | null {
  if (w.status === 'warm') return null;
  return w.schedule[w.dayIndex] ?? null;
}
