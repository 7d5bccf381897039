/**
 * The retry schedule of SPEC.md part 6, counted from the previous failure:
 * first attempt at once, then 5 min, 30 min, 2 h, 8 h and 24 h. After the
 * fifth retry fails the delivery is `failed` (kept, and can be redelivered,
 * which starts a new cycle of the same schedule).
 */
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

export const RETRY_DELAYS_MS: readonly number[] = [5 * MINUTE, 30 * MINUTE, 2 * HOUR, 8 * HOUR, 24 * HOUR];

/**
 * When to try again after the `failedInCycle`-th failed attempt of the current
 * cycle (1 = the first attempt failed), or null when the retries are used up.
 */
export function nextAttemptAfterFailure(failedInCycle: number, failedAt: number): number | null {
  const delay = RETRY_DELAYS_MS[failedInCycle - 1];
  return delay === undefined ? null : failedAt + delay;
}
