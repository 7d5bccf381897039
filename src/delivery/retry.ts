/**
 * When a deferred message is tried again. Live mail follows DESIGN.md's
 * schedule (1 m, 5 m, 15 m, 30 m, 1 h, 2 h, then every 4 h) with ±10 %
 * jitter, so a burst deferred together does not return as one burst. The
 * sandbox simulator uses the same schedule in seconds instead of minutes, so an
 * application sees a `deferred` status it can poll and the outcome soon after.
 */
const MINUTE = 60_000;
const SCHEDULE_MINUTES = [1, 5, 15, 30, 60, 120];
const STEADY_MINUTES = 240;
export const JITTER = 0.1;

/** Base delay before attempt n+1 after the nth deferral (n ≥ 1), without jitter. */
export function baseDelayMs(deferrals: number, unitMs = MINUTE): number {
  const minutes = SCHEDULE_MINUTES[Math.max(0, deferrals - 1)] ?? STEADY_MINUTES;
  return minutes * unitMs;
}

export const SANDBOX_UNIT_MS = 1000;

/**
 * The next attempt time, or null when the queue lifetime is over (the caller
 * turns that into a soft bounce). A retry that would fall after the deadline
 * is moved to the deadline, so the last attempt happens when the lifetime ends.
 */
export function nextAttemptAt(input: {
  now: number;
  deferrals: number;
  deadline: number;
  unitMs?: number;
  random?: () => number;
}): number | null {
  const { now, deferrals, deadline } = input;
  if (now >= deadline) return null;
  const base = baseDelayMs(deferrals, input.unitMs);
  const jitter = 1 + JITTER * (2 * (input.random ?? Math.random)() - 1);
  return Math.min(now + Math.round(base * jitter), deadline);
}
