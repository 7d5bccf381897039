/**
 * Work to do once a writer transaction's commit is durable: the writer
 * (writer.ts) opens a list for each transaction it runs and settles it after
 * the commit's WAL sync, just before it answers the group's callers, or at
 * once with false when the transaction rolled back. What a hook hands on from
 * a transaction's writes (webhook deliveries to the dispatcher in memory,
 * webhooks/handoff.ts) then never runs ahead of the 202 or 250 that makes
 * them real: a crash before the sync can lose those writes with their answer,
 * and nothing has been sent on their behalf.
 */
import type { Tx } from './index';

/**
 * Told true once the transaction's commit is durable, false when it rolled back or its sync failed. After a
 * failed sync (or a COMMIT whose outcome is unknown) the writes may be there all the same: what a hook had
 * written for itself (rows leased to the dispatcher) waits for its lease to lapse or the next start.
 */
export type DurableHook = (durable: boolean) => void;

const open = new WeakMap<Tx, DurableHook[]>();

/** Calls `hook` when `trx` settles (see above). False, and `hook` is never called, for a transaction no writer runs. */
export function whenDurable(trx: Tx, hook: DurableHook): boolean {
  const hooks = open.get(trx);
  if (!hooks) return false;
  hooks.push(hook);
  return true;
}

/** The writer: a new transaction of its group. */
export function openDurableHooks(trx: Tx): DurableHook[] {
  const hooks: DurableHook[] = [];
  open.set(trx, hooks);
  return hooks;
}

/** The writer: the transaction is settled. A hook that throws does not keep the others or the callers' answers. */
export function settleDurableHooks(hooks: DurableHook[], durable: boolean): void {
  for (const hook of hooks.splice(0)) {
    try {
      hook(durable);
    } catch {
      // a hook reports its own failures (the dispatcher logs them); the writer's answers must go out regardless
    }
  }
}
