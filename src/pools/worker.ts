/**
 * The pools module's background loop: writes the buffered counters of
 * uncapped addresses every second (warming addresses are written at once),
 * and once an hour forgets counters older than 60 days and cool-downs that
 * ended a day ago.
 */
import type { AppDeps } from '../deps';
import type { Worker } from '../modules';
import { pruneThrottles, pruneUsage } from './ip-state';
import { ipRuntimeFor } from './runtime';
import { DAY_MS, utcDay } from './schedule';

const FLUSH_MS = 1_000;
const PRUNE_MS = 3_600_000;

export function createPoolsWorker(deps: AppDeps): Worker {
  const runtime = ipRuntimeFor(deps);
  let flushTimer: NodeJS.Timeout | undefined;
  let pruneTimer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const flush = () => {
    running = running.then(() => runtime.flush()).catch((err) => deps.log.error({ err }, 'writing IP usage counters failed; will retry'));
    return running;
  };
  const prune = async () => {
    const now = deps.clock.now();
    await pruneUsage(deps.db, utcDay(now - 60 * DAY_MS));
    await pruneThrottles(deps.db, now - DAY_MS);
  };
  return {
    name: 'pools',
    start() {
      flushTimer = setInterval(() => void flush(), FLUSH_MS);
      flushTimer.unref();
      pruneTimer = setInterval(() => void prune().catch((err) => deps.log.error({ err }, 'pruning IP counters failed')), PRUNE_MS);
      pruneTimer.unref();
    },
    async stop() {
      clearInterval(flushTimer);
      clearInterval(pruneTimer);
      // sends in flight settle (refunds) as the MTA stops; count them before the last write
      await runtime.drained(Math.min(2_000, deps.config.http.shutdownTimeoutMs / 2));
      await flush();
    },
    async runOnce() {
      await flush();
      await prune();
    },
  };
}
