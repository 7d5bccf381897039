/**
 * Time is injected so retry schedules, warm-up days and webhook backoff can be
 * tested with a fake clock. Everything that stores or compares a time asks the
 * clock; nothing calls Date.now() directly.
 */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to. */
export class FakeClock implements Clock {
  constructor(private current = Date.UTC(2026, 0, 5, 9, 0, 0)) {}
  now(): number {
    return this.current;
  }
  set(ms: number): void {
    this.current = ms;
  }
  advance(ms: number): void {
    this.current += ms;
  }
}

export const iso = (ms: number | null | undefined): string | null =>
  ms === null || ms === undefined ? null : new Date(ms).toISOString();
