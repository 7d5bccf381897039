/**
 * Every write of the MTA (claims, signed contents, outcomes) goes through one
 * `Transact` function. With synchronous=FULL each commit is an fsync, so at
 * speed these writes share transactions (group commit): one fsync makes many
 * claims and outcomes durable, and each caller still resumes only after the
 * commit that holds its writes.
 */
import type { Db, Tx } from '../db';

export type Transact = <T>(work: (trx: Tx) => Promise<T>) => Promise<T>;

export const ownTransaction = (db: Db): Transact => (work) => db.transaction(work);
