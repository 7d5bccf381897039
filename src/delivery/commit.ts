/**
 * Every write of the MTA (claims, signed contents, outcomes) goes through the
 * shared writer (src/db/writer.ts): claims as plain work (`Transact`),
 * outcomes as a batch kind (`Submit`), so claims and outcomes share
 * transactions with each other and with accepted sends, every outcome of a
 * transaction is one UPDATE, and each caller resumes only after the commit
 * that holds its writes. MTA writes are conditional on the lease, so running
 * one again after a rollback is safe.
 */
import type { Db, Tx } from '../db';
import type { BatchKind } from '../db/writer';

export type Transact = <T>(work: (trx: Tx) => Promise<T>) => Promise<T>;
export type Submit = <I, R>(kind: BatchKind<I, R>, item: I) => Promise<R>;

/** Each piece of work in a transaction of its own (tests, tools). */
export const ownTransaction = (db: Db): Transact => (work) => db.transaction(work);

/** Each batch item in a transaction of its own (tests, tools). */
export const ownBatch = (db: Db): Submit => (kind, item) => db.transaction(async (trx) => (await kind.run(trx, [item]))[0]);
