/**
 * The pools module's background loops: `pools` writes this node's buffered
 * counters of uncapped addresses every second (warming addresses are written
 * at once), on every node; `pools-prune`, once an hour, forgets counters
 * older than 60 days and cool-downs that ended a day ago, on the elected node
 * only (modules.ts wraps it with db/leader.ts). Warm-up days roll over where
 * an address is used (budget.ts `rollWarmup`, in the transaction that counts
 * a send), so only the node that has the address ever rolls it.
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
  let running: Promise<void> = Promise.resolve();
  const flush = () => {
    running = running.then(() => runtime.flush()).catch((err) => deps.log.error({ err }, 'writing IP usage counters failed; will retry'));
    return running;
  };
  return {
    name: 'pools',
    start() {
      flushTimer = setInterval(() => void flush(), FLUSH_MS);
      flushTimer.unref();
    },
    async stop() {
      clearInterval(flushTimer);
      // sends in flight settle (refunds) as the MTA stops; count them before the last write
      await runtime.drained(Math.min(2_000, deps.config.http.shutdownTimeoutMs / 2));
      await flush();
    },
    runOnce: flush,
  };
}

/** Hourly clean-up of old counters and ended cool-downs; one node does it (a singleton). */
export function createPoolsPruneWorker(deps: AppDeps): Worker {
  let pruneTimer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const prune = async () => {
    const now = deps.clock.now();
    await pruneUsage(deps.db, utcDay(now - 60 * DAY_MS));
    await pruneThrottles(deps.db, now - DAY_MS);
  };
  const tick = () => {
    running = prune().catch((err) => deps.log.error({ err }, 'pruning IP counters failed'));
  };
  return {
    name: 'pools-prune',
    start() {
      pruneTimer = setInterval(tick, PRUNE_MS);
      pruneTimer.unref();
    },
    async stop() {
      clearInterval(pruneTimer);
      await running;
    },
    runOnce: prune,
  };
}
