/**
 * Every write of the MTA (claims, signed contents, outcomes) goes through one
 * `Transact` function: in the app it is the shared writer (src/db/writer.ts),
 * so claims and outcomes share transactions with each other and with accepted
 * sends, and each caller resumes only after the commit that holds its writes.
 * MTA writes are conditional on the lease, so running one again after a
 * rollback is safe.
 */
import type { Db, Tx } from '../db';

export type Transact = <T>(work: (trx: Tx) => Promise<T>) => Promise<T>;

/** Each piece of work in a transaction of its own (tests, tools). */
export const ownTransaction = (db: Db): Transact => (work) => db.transaction(work);
