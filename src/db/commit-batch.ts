/**
 * Fewer trips per transaction on a writing SQLite connection. Each statement
 * the sqlite3 driver runs is one trip to its thread pool and back through the
 * event loop: a thread wake-up each way, ~0.35 ms of waiting even on an idle
 * machine and 110–190 µs of the main thread's time under load. A writer
 * group of API accepts was five trips (BEGIN, the contents, messages and
 * events inserts, COMMIT), a group of MTA outcomes six. Two changes:
 *
 * - BEGIN waits for the transaction's first statement: it is sent just
 *   before it, or in one exec with the ridden rows and COMMIT. Nothing runs
 *   on the connection in between, so the write lock is taken at the same
 *   point of the transaction's work. A transaction that ran no statement
 *   commits or rolls back without a trip at all.
 * - The writer's buffered rows (buffer.ts) can ride with the COMMIT
 *   (`rideWithCommit`): their statements, with their values written into the
 *   text (inserts as a VALUES list, blobs as hex within a budget:
 *   sql-values.ts; counters and a string with a NUL as one JSON literal:
 *   json-rows.ts), go to `sqlite3_exec` together with BEGIN and COMMIT.
 *
 * A group of accepts is one trip while its contents are small (their bytes
 * ride as hex: sql-values.ts), three when they are not (BEGIN, the contents,
 * whose bytes are bound, then the other rows with the COMMIT); outcomes are
 * three (BEGIN, the lease-checked UPDATE whose answer the MTA reads, the rest
 * with the COMMIT), a group that only inserts one.
 *
 * Errors keep their meaning. A ridden statement that fails fails the COMMIT
 * with its own error (knex then rejects the transaction, and the writer
 * splits the group as for any failure), and the connection is rolled back
 * before that answer, so no transaction stays open after a failed COMMIT.
 * A statement run between `rideWithCommit` and the COMMIT sends the ridden
 * ones first, in order. Any exec sent ahead of a statement that fails (BEGIN
 * busy, a ridden row) rolls back and ends the transaction: its later
 * statements fail with that error. `sqlite3_exec` binds nothing: only
 * statements whose values are in their text ride, so a value never reaches
 * SQL unquoted.
 */
import type { Callback, SqliteConnection } from './statement-cache';
import type { Tx } from './index';

export interface ExecConnection extends SqliteConnection {
  exec(sql: string, cb: (err: Error | null) => void): unknown;
}

type Exec = (sql: string, cb: (err: Error | null) => void) => void;

/**
 * The transaction state of one connection, as far as this wrapper knows it. While an exec sent ahead of a
 * statement (the deferred BEGIN, ridden rows) is on its way, every later call waits for it: the driver runs a
 * prepared statement on its thread pool at once, beside an exec, so a statement sent meanwhile could run before
 * the BEGIN, outside the transaction.
 */
class Pending {
  /** a transaction is open on the connection, its BEGIN maybe not sent yet (`begin`) */
  inTransaction = false;
  /** the BEGIN knex asked for, not sent yet */
  begin?: string;
  /** statements to send before the COMMIT (or before the next statement) */
  tail: string[] = [];
  /** calls that arrived while an exec was on its way: run after it, in order */
  waiting?: Array<() => void>;
  /** the error of an exec sent ahead: the transaction is over, its later statements fail with a copy of it */
  failed?: Error;
  /** `failed`'s message when it came: knex prefixes each failing query's SQL to the message of the error it gets */
  private failedMessage = '';

  constructor(private readonly exec: Exec) {}

  /**
   * What is pending (BEGIN, ridden statements) as one text, and forgets it; undefined when nothing is. Each
   * statement is followed by `\n;` whether or not it ends with one: an extra `;` is an empty statement, which exec
   * skips, the line break ends a trailing `--` comment, and a test of the last character would first copy a
   * ridden text (built by concatenation) whole.
   */
  take(): string | undefined {
    if (this.begin === undefined && !this.tail.length) return undefined;
    const text = `${[this.begin, ...this.tail].filter((s) => s !== undefined).join('\n;\n')}\n;`;
    this.begin = undefined;
    this.tail = [];
    return text;
  }

  /**
   * Runs `text` while later calls wait. A failure ends the transaction: the statement that failed left it open
   * (SQLite undoes only the statement), so it is rolled back before anyone is answered; the ROLLBACK's own error
   * ("no transaction is active", when BEGIN itself failed) says nothing new.
   */
  send(text: string, then: (err: Error | null) => void): void {
    this.waiting = [];
    this.exec(text, (err) => {
      const finish = () => {
        const waiting = this.waiting ?? [];
        this.waiting = undefined;
        then(err);
        for (const call of waiting) call();
      };
      if (!err) return finish();
      this.failed = err;
      this.failedMessage = err.message;
      this.exec('ROLLBACK', finish);
    });
  }

  /** A new error like `failed` for one more caller (each caller's error is its own: knex rewrites its message). */
  failure(): Error | undefined {
    const { failed } = this;
    if (!failed) return undefined;
    const { code, errno } = failed as NodeJS.ErrnoException;
    return Object.assign(new Error(this.failedMessage, { cause: failed }), { code, errno });
  }

  /** The transaction ended (COMMIT or ROLLBACK asked): forgets its state; returns its failure, if any. */
  end(): Error | undefined {
    const failed = this.failure();
    Object.assign(this, { inTransaction: false, begin: undefined, tail: [], failed: undefined });
    return failed;
  }
}

const pendings = new WeakMap<object, Pending>();

const BEGIN = /^\s*begin\b/i;
const COMMIT = /^\s*(commit|end)\b/i;
const ROLLBACK = /^\s*rollback\s*;?\s*$/i;

/** Wraps `all` and `run` of `conn` (idempotent): BEGIN deferred, ridden statements sent with the COMMIT. */
export function batchTransactionEnds(conn: ExecConnection): void {
  if (pendings.has(conn)) return;
  const pending = new Pending((sql, cb) => conn.exec(sql, cb));
  pendings.set(conn, pending);
  for (const method of ['all', 'run'] as const) {
    const plain = conn[method].bind(conn);
    const wrapped = (sql: string, params: unknown, cb: Callback): unknown => {
      if (typeof cb !== 'function') return plain(sql, params, cb);
      if (pending.waiting) return pending.waiting.push(() => replay(() => wrapped(sql, params, cb), cb));
      if (BEGIN.test(sql) && !pending.inTransaction) {
        pending.inTransaction = true;
        pending.begin = sql;
        return answerLater(cb);
      }
      if (COMMIT.test(sql)) return commit(pending, sql, cb);
      if (ROLLBACK.test(sql)) return rollback(pending, () => plain(sql, params, cb), cb);
      if (pending.failed) return answerLater(cb, pending.failure());
      const before = pending.take();
      if (!before) return plain(sql, params, cb);
      pending.send(before, (err) => (err ? cb.call(undefined, err) : plain(sql, params, cb)));
    };
    conn[method] = wrapped;
  }
}

function commit(pending: Pending, sql: string, cb: Callback): void {
  const nothingRan = pending.begin !== undefined && !pending.tail.length;
  const before = pending.take();
  const failed = pending.end();
  if (failed) return answerLater(cb, failed); // rolled back already: the transaction fails with its error
  if (nothingRan) return answerLater(cb); // nothing to commit
  // Through send even alone: a COMMIT that fails (a full disk) leaves the transaction open, and knex sends no
  // ROLLBACK after it; send closes it before the answer.
  pending.send(before === undefined ? `${sql}\n;` : `${before}\n${sql}\n;`, (err) => {
    pending.failed = undefined; // this transaction is over either way: its failure is the COMMIT's answer alone
    return err ? cb.call(undefined, err) : cb.call(undefined, null, []);
  });
}

function rollback(pending: Pending, plain: () => void, cb: Callback): void {
  const begun = pending.begin === undefined;
  const failed = pending.end();
  return begun && !failed ? plain() : answerLater(cb);
}

/** Runs a call that waited; one that throws at once gets the error in its callback, and the others still run. */
function replay(call: () => void, cb: Callback): void {
  try {
    call();
  } catch (err) {
    cb.call(undefined, err instanceof Error ? err : new Error(String(err)));
  }
}

/** Answers a call that needed no trip, asynchronously as the driver would. */
function answerLater(cb: Callback, err: Error | null | undefined = null): void {
  process.nextTick(() => (err ? cb.call(undefined, err) : cb.call(undefined, null, [])));
}

/**
 * Sends `statements` (complete SQL, no parameters) with `trx`'s COMMIT instead of now; false when its connection
 * cannot (PostgreSQL, a handle not wrapped above), and the caller runs them itself.
 */
export async function rideWithCommit(trx: Tx, statements: readonly string[]): Promise<boolean> {
  // A handle's acquireConnection would take a connection from its pool; a completed transaction's connection
  // may already run the next one.
  if (!trx.isTransaction || trx.isCompleted()) return false;
  const conn = (await trx.client.acquireConnection()) as KnexConnection | undefined;
  const pending = conn && typeof conn === 'object' ? pendings.get(conn) : undefined;
  // No transaction known here (its BEGIN failed, or was refused before reaching us): nothing may ride, or the
  // statements would run with whatever the connection runs next, outside any transaction.
  if (!conn || !pending?.inTransaction || pending.failed || trx.isCompleted()) return false;
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
