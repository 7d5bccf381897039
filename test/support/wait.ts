/*
 * waitFor(count) for the recording servers: tests await what arrived instead of
 * sleeping, and a timeout says what was expected and what came.
 */
export interface Arrivals<T> {
  /** resolves with items once it holds at least count; rejects after timeoutMs */
  waitFor(count: number, timeoutMs?: number): Promise<T[]>;
  /** call after pushing to items */
  notify(): void;
}

export function arrivals<T>(items: T[], describe: (count: number, timeoutMs: number) => string): Arrivals<T> {
  const waiters = new Set<() => void>();
  return {
    notify: () => waiters.forEach((check) => check()),
    waitFor(count, timeoutMs = 2000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          if (items.length < count) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(items);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(describe(count, timeoutMs)));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
  };
}

/**
 * Polls `probe` every 50 ms until it returns true; resolves with the milliseconds that took, or rejects
 * after timeoutMs. For a change another process makes, which a running server sees within a stated bound.
 */
export async function eventually(probe: () => Promise<boolean>, timeoutMs: number, what: string): Promise<number> {
  const started = performance.now();
  for (;;) {
    if (await probe()) return performance.now() - started;
    if (performance.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
