/**
 * The re-check worker: verified and failing domains are looked up again every
 * `domains.recheckIntervalHours`, and a failing domain as soon as its grace
 * period (`domains.failingGraceHours`) is over, so records that disappear move
 * the domain to failing and, if they stay away, back to pending.
 */
import type { AppDeps } from '../deps';
import type { Worker } from '../modules';
import { pollingWorker } from '../util/polling-worker';
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
  async function runDue(stopping: () => boolean): Promise<void> {
    const seen = new Set<string>();
    for (;;) {
      if (stopping()) return;
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

  return pollingWorker({ name: 'domains-recheck', everyMs: POLL_MS, log: deps.log, failure: 'domain re-check failed', runDue });
}
