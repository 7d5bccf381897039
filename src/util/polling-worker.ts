/**
 * A background loop that looks for due work once a minute (domain re-checks,
 * the reputation watch): one run at a time, a run asked for while one is going
 * shares it, errors are logged (the next poll tries again), and stop() waits
 * for the run in progress, which sees `stopping()` and ends early.
 */
import type { Logger } from '../logger';

export interface PollingWorker {
  name: string;
  start(): void;
  stop(): Promise<void>;
  runOnce(): Promise<void>;
}

export function pollingWorker(options: {
  name: string;
  everyMs: number;
  /** false: start() arms no timer (runOnce still runs, for tests and tools) */
  enabled?: boolean;
  log: Logger;
  /** the log line of a failed run */
  failure: string;
  runDue(stopping: () => boolean): Promise<void>;
}): PollingWorker {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopping = false;
  const run = (): Promise<void> => (running ??= options.runDue(() => stopping).finally(() => (running = undefined)));
  const tick = () => void run().catch((err: Error) => options.log.error({ err: err.message }, options.failure));
  return {
    name: options.name,
    start() {
      stopping = false;
      if (options.enabled === false) return;
      // the first run comes with the first poll, not in the rush of starting
      timer = setInterval(tick, options.everyMs);
      timer.unref();
    },
    async stop() {
      stopping = true;
      if (timer) clearInterval(timer);
      await running?.catch(() => undefined);
    },
    runOnce: run,
  };
}
