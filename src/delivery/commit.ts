/**
 * Every write of the MTA (claims, signed contents, outcomes) goes through one
 * `Transact` function. With synchronous=FULL each commit is an fsync, so at
 * speed these writes share transactions (group commit): work submitted while
 * a commit is in flight goes into the next one, one fsync makes many claims
 * and outcomes durable, and each caller resumes only after the commit that
 * holds its writes. A failing piece of work must not fail its neighbours: the
 * group is rolled back and each piece retried alone. MTA writes are
 * conditional on the lease, so running one again after a rollback is safe.
 */
import type { Db, Tx } from '../db';

export type Transact = <T>(work: (trx: Tx) => Promise<T>) => Promise<T>;

export const ownTransaction = (db: Db): Transact => (work) => db.transaction(work);

interface Pending {
  work: (trx: Tx) => Promise<unknown>;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

/** Group commit over `db`; at most `maxGroup` pieces of work per transaction. */
export function groupCommit(db: Db, maxGroup = 200): Transact {
  let queue: Pending[] = [];
  let running = false;

  const drain = async (): Promise<void> => {
    running = true;
    while (queue.length) {
      const group = queue.slice(0, maxGroup);
      queue = queue.slice(group.length);
      await commit(db, group);
    }
    running = false;
  };

  return <T>(work: (trx: Tx) => Promise<T>) =>
    new Promise<T>((resolve, reject) => {
      queue.push({ work, resolve: resolve as (v: unknown) => void, reject });
      // Start on the next turn so work submitted in this one joins the group.
      if (!running && queue.length === 1) setImmediate(() => void drain());
    });
}

async function commit(db: Db, group: Pending[]): Promise<void> {
  try {
    const results = await db.transaction(async (trx) => {
      const out: unknown[] = [];
      for (const p of group) out.push(await p.work(trx));
      return out;
    });
    group.forEach((p, i) => p.resolve(results[i]));
  } catch (err) {
    if (group.length === 1) return group[0].reject(err);
    for (const p of group) await db.transaction(p.work).then(p.resolve, p.reject);
  }
}
