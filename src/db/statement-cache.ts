/**
 * Prepared statements kept and reused on each SQLite connection.
 *
 * knex hands every query to the sqlite3 driver as `connection.all(sql, …)` or
 * `connection.run(sql, …)`, and the driver answers each with a new statement:
 * one trip to the thread pool to prepare it and a second to run it. Each
 * trip comes back through the event loop, which under load is busy with HTTP
 * and SMTP work, so a trip costs about a millisecond of waiting. On the one
 * writer connection those waits add up in series: a transaction of a dozen
 * statements took ~20 ms, and the writer, not the CPU, limited throughput.
 *
 * With this cache a statement seen before runs in one trip: the driver's own
 * prepared `Statement`, reset and bound again (the driver clears the old
 * bindings only when a run binds values: see keepable). Only `all` and `run` are cached: both step to
 * the end, so a kept statement never holds a read snapshot open (`get` and
 * `each` may stop early and would). Statement texts come from our code, with
 * values bound, so the variety is bounded by shapes and list lengths; the
 * least recently used beyond MAX_STATEMENTS, or beyond MAX_KEPT_CHARS of SQL
 * text, are finalized. The second bound matters: a prepared multi-row
 * statement takes ~60 bytes of memory per character of its text, and list
 * lengths (a request's recipients, a group's rows) make many long texts, so
 * 256 of them could hold a quarter of a gigabyte per connection. `close`
 * finalizes them all first, since SQLite refuses to close with statements
 * open.
 */
import sqlite3 from 'sqlite3';

/** The parts of a sqlite3 Database and Statement this module uses. */
export interface SqliteConnection {
  all(sql: string, params: unknown, cb: Callback): unknown;
  run(sql: string, params: unknown, cb: Callback): unknown;
  close(cb?: (err: Error | null) => void): unknown;
}

/**
 * The driver's statement constructor: its callback is called once, with null when prepared or with the error.
 * (`Database#prepare` would also bind, and on a failed prepare call back twice.)
 */
type StatementConstructor = new (conn: SqliteConnection, sql: string, cb: (err: Error | null) => void) => SqliteStatement;

interface SqliteStatement {
  all(params: unknown, cb: Callback): unknown;
  run(params: unknown, cb: Callback): unknown;
  finalize(cb?: () => void): unknown;
}

export type Callback = (this: unknown, err: Error | null, rows?: unknown) => void;

/** Statements kept per connection: our hot statements are a few dozen texts; lists of ids add lengths. */
export const MAX_STATEMENTS = 256;
/** SQL text kept per connection (~15 MB prepared, at most); a longer text than an eighth of it is never kept. */
export const MAX_KEPT_CHARS = 256 * 1024;
const MAX_STATEMENT_CHARS = MAX_KEPT_CHARS / 8;
/** A placeholder, for a run with no values (below). */
const PARAMETER = /[?:@$]/;

interface Kept {
  statement: SqliteStatement;
  /** false until prepared: a second caller meanwhile takes the uncached path */
  ready: boolean;
}

/** Makes `conn` reuse prepared statements for `all` and `run` (idempotent per connection). */
export function cacheStatements(conn: SqliteConnection, Statement: StatementConstructor = sqlite3.Statement as unknown as StatementConstructor): void {
  const marked = conn as SqliteConnection & { statementCache?: true };
  if (marked.statementCache) return;
  marked.statementCache = true;
  const kept = new Map<string, Kept>();
  const size = { chars: 0 };
  const plain = { all: conn.all.bind(conn), run: conn.run.bind(conn), close: conn.close.bind(conn) };

  const viaCache = (method: 'all' | 'run') => (sql: string, params: unknown, cb: Callback) => {
    if (typeof cb !== 'function' || !keepable(sql, params)) return plain[method](sql, params, cb);
    const entry = kept.get(sql);
    if (entry?.ready) {
      kept.delete(sql); // most recently used last
      kept.set(sql, entry);
      return entry.statement[method](params, cb);
    }
    if (entry) return plain[method](sql, params, cb);
    prepareAndRun(sql, method, params, cb);
    return conn;
  };

  const prepareAndRun = (sql: string, method: 'all' | 'run', params: unknown, cb: Callback) => {
    const entry: Kept = { statement: undefined as unknown as SqliteStatement, ready: false };
    kept.set(sql, entry);
    size.chars += sql.length;
    entry.statement = new Statement(conn, sql, (err) => {
      if (err) {
        if (kept.get(sql) === entry) forget(kept, size, sql);
        return cb.call(entry.statement, err); // the error the driver's own path gives for a statement that does not prepare
      }
      entry.ready = true;
      evictBeyond(kept, size);
      entry.statement[method](params, cb);
    });
  };

  conn.all = viaCache('all');
  conn.run = viaCache('run');
  conn.close = (cb?: (err: Error | null) => void) => {
    const statements = [...kept.values()].map((e) => e.statement);
    kept.clear();
    size.chars = 0;
    let left = statements.length;
    if (!left) return plain.close(cb);
    // finalize is queued behind a statement's running work, so every one is done before the close is asked
    for (const s of statements) s.finalize(() => --left === 0 && plain.close(cb));
    return conn;
  };
}

/**
 * Whether a run may use (and keep) a prepared statement. Not a very long text (see MAX_KEPT_CHARS); not a
 * text with parameters run without values: the driver clears a statement's bindings only when it binds
 * new ones, so such a run would see the values of the previous run, maybe another account's.
 */
function keepable(sql: string, params: unknown): boolean {
  if (sql.length > MAX_STATEMENT_CHARS) return false;
  const values = Array.isArray(params) ? params.length : params == null ? 0 : 1;
  return values > 0 || !PARAMETER.test(sql);
}

function forget(kept: Map<string, Kept>, size: { chars: number }, sql: string): void {
  kept.delete(sql);
  size.chars -= sql.length;
}

function evictBeyond(kept: Map<string, Kept>, size: { chars: number }): void {
  for (const [sql, entry] of kept) {
    if (kept.size <= MAX_STATEMENTS && size.chars <= MAX_KEPT_CHARS) return;
    if (!entry.ready) continue;
    forget(kept, size, sql);
    entry.statement.finalize();
  }
}
