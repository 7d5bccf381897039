/**
 * Fewer trips per transaction on a writing SQLite connection. Each statement
 * the sqlite3 driver runs is one trip to its thread pool and back through the
 * event loop: a thread wake-up each way, ~0.35 ms of waiting even on an idle
 * machine and 110–190 µs of the main thread's time under load. A writer
 * group of API accepts was five trips (BEGIN, the contents, messages and
 * events inserts, COMMIT), a group of MTA outcomes six. Two changes:
 *
 * - BEGIN waits for the transaction's first statement: it is sent just
 *   before it, or in one exec with the ridden rows and COMMIT. Nothing runs on the connection in between, so the write lock is taken
 *   at the same point of the transaction's work. A transaction that ran no
 *   statement commits or rolls back without a trip at all.
 * - The writer's buffered rows (buffer.ts) can ride with the COMMIT
 *   (`rideWithCommit`): their statements, with their one JSON value written
 *   as a literal, go to `sqlite3_exec` together with BEGIN and COMMIT.
 *
 * Accepts are three trips now (BEGIN, the contents, whose bytes are bound,
 * then the other rows with the COMMIT), outcomes three (BEGIN, the lease-
 * checked UPDATE whose answer the MTA reads, the rest with the COMMIT), a
 * group that only inserts text and numbers one.
 *
 * Errors keep their meaning. A ridden statement that fails fails the COMMIT
 * with its own error (knex then rejects the transaction, and the writer
 * splits the group as for any failure), and the connection is rolled back
 * before that answer, so no transaction stays open after a failed COMMIT.
 * A statement run between `rideWithCommit` and the COMMIT sends the ridden
 * ones first, in order. `sqlite3_exec` binds nothing: only statements whose
 * values are in their text ride, so a value never reaches SQL unquoted.
 */
import type { Callback, SqliteConnection } from './statement-cache';
import type { Tx } from './index';

export interface ExecConnection extends SqliteConnection {
  exec(sql: string, cb: (err: Error | null) => void): unknown;
}

interface Pending {
  /** a transaction is open on the connection, its BEGIN maybe not sent yet (`begin`) */
  inTransaction: boolean;
  /** the BEGIN knex asked for, not sent yet */
  begin?: string;
  /** statements to send before the COMMIT (or before the next statement) */
  tail: string[];
}

const pendings = new WeakMap<object, Pending>();

const BEGIN = /^\s*begin\b/i;
const COMMIT = /^\s*(commit|end)\b/i;
const ROLLBACK = /^\s*rollback\s*;?\s*$/i;

/** Wraps `all` and `run` of `conn` (idempotent): BEGIN deferred, ridden statements sent with the COMMIT. */
export function batchTransactionEnds(conn: ExecConnection): void {
  if (pendings.has(conn)) return;
  const pending: Pending = { inTransaction: false, tail: [] };
  pendings.set(conn, pending);
  const exec = (sql: string, cb: (err: Error | null) => void) => conn.exec(sql, cb);
  for (const method of ['all', 'run'] as const) {
    const plain = conn[method].bind(conn);
    conn[method] = (sql, params, cb) => {
      if (typeof cb !== 'function') return plain(sql, params, cb);
      if (BEGIN.test(sql) && !pending.inTransaction) {
        pending.inTransaction = true;
        pending.begin = sql;
        return answerLater(cb);
      }
      if (COMMIT.test(sql)) return commit(pending, sql, exec, () => plain(sql, params, cb), cb);
      if (ROLLBACK.test(sql)) return rollback(pending, () => plain(sql, params, cb), cb);
      const before = takeAll(pending);
      if (!before) return plain(sql, params, cb);
      exec(before, (err) => (err ? cb.call(undefined, err) : plain(sql, params, cb)));
    };
  }
}

/** What is pending (BEGIN, ridden statements) as one text, and forgets it; undefined when nothing is. */
function takeAll(pending: Pending): string | undefined {
  if (pending.begin === undefined && !pending.tail.length) return undefined;
  const text = [pending.begin, ...pending.tail].filter((s) => s !== undefined).map(terminated).join('\n');
  pending.begin = undefined;
  pending.tail = [];
  return text;
}

function commit(pending: Pending, sql: string, exec: (sql: string, cb: (err: Error | null) => void) => void, plain: () => void, cb: Callback): void {
  pending.inTransaction = false;
  if (pending.begin !== undefined && !pending.tail.length) {
    pending.begin = undefined; // nothing ran: there is nothing to commit
    return answerLater(cb);
  }
  const before = takeAll(pending);
  if (!before) return plain();
  exec(`${before}\n${terminated(sql)}`, (err) => {
    if (!err) return cb.call(undefined, null, []);
    // The failing statement left the transaction open (SQLite rolls back only the statement): close it before
    // answering, so the connection goes back to the pool with none open. Its own error ("no transaction is
    // active", when BEGIN itself failed) says nothing new.
    exec('ROLLBACK', () => cb.call(undefined, err));
  });
}

function rollback(pending: Pending, plain: () => void, cb: Callback): void {
  pending.inTransaction = false;
  const begun = pending.begin === undefined;
  pending.begin = undefined;
  pending.tail = [];
  return begun ? plain() : answerLater(cb);
}

/** Answers a statement that needed no trip, asynchronously as the driver would. */
function answerLater(cb: Callback): void {
  process.nextTick(() => cb.call(undefined, null, []));
}

/** A cheap test on purpose: ridden texts are long, and an extra `;` is an empty statement, which exec skips. */
const terminated = (sql: string) => (sql.endsWith(';') ? sql : `${sql};`);

/**
 * Sends `statements` (complete SQL, no parameters) with `trx`'s COMMIT instead of now; false when its connection
 * cannot (PostgreSQL, a handle not wrapped above), and the caller runs them itself.
 */
export async function rideWithCommit(trx: Tx, statements: readonly string[]): Promise<boolean> {
  if (!trx.isTransaction) return false; // a handle's acquireConnection would take a connection from its pool
  const conn = (await trx.client.acquireConnection()) as KnexConnection | undefined;
  const pending = conn && typeof conn === 'object' ? pendings.get(conn) : undefined;
  // No transaction known here (its BEGIN failed, or was refused before reaching us): nothing may ride, or the
  // statements would run with whatever the connection runs next, outside any transaction.
  if (!conn || !pending?.inTransaction) return false;
  pending.tail.push(...statements);
  // Counted as statements run, as knex counts its own (tests and the bench's statement count listen for these).
  for (const sql of statements) trx.client.emit('query', { __knexUid: conn.__knexUid, __knexTxId: conn.__knexTxId, method: 'raw', sql, bindings: [], ridesWithCommit: true });
  return true;
}

interface KnexConnection {
  __knexUid?: string;
  __knexTxId?: string;
}

/**
 * `text` as an SQL string literal: SQLite's only special character in one is the quote, written twice. A NUL
 * would end the text `sqlite3_exec` reads, so none is accepted (JSON.stringify escapes it).
 */
export function sqlString(text: string): string {
  if (text.includes('\u0000')) throw new Error('an SQL string literal cannot hold a NUL character');
  return `'${text.includes("'") ? text.replaceAll("'", "''") : text}'`;
}
