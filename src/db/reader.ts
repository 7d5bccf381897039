/**
 * The read side of the database: a second knex instance on the same SQLite
 * file, opened read-only (`query_only`), so lookups never queue behind the
 * writer's transactions. WAL lets readers and the one writer work at once; a
 * reader sees every transaction committed before its statement began, so a
 * GET after the same client's POST (answered only once committed) sees it.
 *
 * The reader is attached to the writer handle it belongs to: repository
 * functions that are given the app's handle read through `readerOf(db)`,
 * while a transaction or a CLI handle (nothing attached) reads from itself,
 * which keeps reads inside a transaction consistent with its writes.
 */
import type { Config } from '../config';
import { cachePragmas, databaseFile, Db, MIGRATIONS_DIR, Queryable, READER_CACHE_MIB, sqliteKnex } from './index';
import { postgresKnex, postgresUrl } from './postgres';

/**
 * Two connections: a cache miss of the auth or send path (one indexed read) need not wait behind a GET's
 * list query or an export page; more would add threads a 2-core machine cannot run. With the caches warm
 * the send path reads nothing, so the accept bench cannot tell 1 from 2; revisit with GET-heavy load.
 */
export const READER_CONNECTIONS = 2;

export function openReader(config: Config, filename = databaseFile(config)): Db {
  if (config.database.client === 'postgres') return postgresKnex(postgresUrl(config), READER_CONNECTIONS, MIGRATIONS_DIR, true);
  // journal_mode is a property of the file (the writer set WAL); query_only makes a stray write fail loudly.
  return sqliteKnex(filename, READER_CONNECTIONS, `PRAGMA query_only = ON; PRAGMA busy_timeout = ${config.database.busyTimeoutMs}; ${cachePragmas(READER_CACHE_MIB)}`);
}

const readers = new WeakMap<Queryable, Db>();

export function attachReader(writer: Db, reader: Db): void {
  readers.set(writer, reader);
}

/** The connection to read from: the app's reader for the app's writer handle, otherwise the handle itself. */
export function readerOf(db: Queryable): Queryable {
  return readers.get(db) ?? db;
}

/** True when `db` is an app's writer handle with a reader (and so with read caches); false for a transaction. */
export function hasReader(db: Queryable): boolean {
  return readers.has(db);
}
