/**
 * The re-check worker: verified and failing domains are looked up again every
 * `domains.recheckIntervalHours`, and a failing domain as soon as its grace
 * period (`domains.failingGraceHours`) is over, so records that disappear move
 * the domain to failing and, if they stay away, back to pending.
 */
import type { AppDeps } from '../deps';
import type { Worker } from '../modules';
import { dueForRecheck } from './repository';
import type { DomainsContext } from './service';
import { verificationResolver, verifyDomain } from './verify';

const HOUR = 3_600_000;
const POLL_MS = 60_000;
const BATCH = 20;

export function createRecheckWorker(deps: AppDeps): Worker {
  const ctx: DomainsContext = {
    db: deps.db, config: deps.config, clock: deps.clock, log: deps.log, signals: deps.signals,
    resolver: verificationResolver(deps.config),
  };
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopping = false;

  async function runDue(): Promise<void> {
    const seen = new Set<string>();
    for (;;) {
      if (stopping) return;
      const now = deps.clock.now();
      const due = await dueForRecheck(
        deps.db,
        now - deps.config.domains.recheckIntervalHours * HOUR,
        now - deps.config.domains.failingGraceHours * HOUR,
        BATCH + seen.size,
      );
      // Each domain once per run, even if its check leaves it due (e.g. a clock that does not move).
      const fresh = due.filter((d) => !seen.has(d.id));
      if (!fresh.length) return;
      for (const d of fresh) seen.add(d.id);
      await Promise.all(fresh.map((d) => verifyDomain(ctx, d)));
    }
  }

  const run = (): Promise<void> => (running ??= runDue().finally(() => (running = undefined)));
  const tick = () => void run().catch((err: Error) => deps.log.error({ err: err.message }, 'domain re-check failed'));

  return {
    name: 'domains-recheck',
    start() {
      stopping = false;
      timer = setInterval(tick, POLL_MS);
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
