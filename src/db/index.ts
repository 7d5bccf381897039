/**
 * The database handle: SQLite by default, PostgreSQL when database.client
 * says so (postgres.ts has what differs there). SQLite through knex: WAL so the CLI and readers work
 * while the server writes, foreign keys on, a busy timeout so a second process
 * waits for a lock instead of failing, and the configured fsync policy.
 * Migrations live in /migrations and run at start and by `pigeon migrate`.
 *
 * Tuned for the one writer (writer.ts): a 32 MiB page cache for the hot pages
 * of the queue and its indexes, and a 16 MiB one per reader; reads of the
 * file's first 64 MiB through a memory map; no automatic checkpoint inside a
 * commit (the server checkpoints on a connection of its own, off the commit
 * path: checkpointer.ts); and a WAL truncated back to 64 MiB after a checkpoint.
 * `synchronous = FULL` (the default) makes each commit survive power loss
 * before anyone is told of it; accepts and delivery outcomes share commits, so
 * they share that guarantee. The server keeps it with the WAL's fsync beside
 * the writer rather than inside each COMMIT (wal-sync.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import knex, { Knex } from 'knex';
import type { Config } from '../config';
import { ensurePrivateDir, ensurePrivateFile } from '../util/private-fs';
import { postgresKnex, postgresUrl } from './postgres';
import { batchTransactionEnds, type ExecConnection } from './commit-batch';
import { cacheStatements, SqliteConnection } from './statement-cache';
import { syncCommits, type SyncCalls, WalSync } from './wal-sync';

export type Db = Knex;
export type Tx = Knex.Transaction;
/** Either the database or an open transaction: repository functions accept both. */
export type Queryable = Knex | Knex.Transaction;

export const MIGRATIONS_DIR = path.resolve(__dirname, '..', '..', '..', 'migrations');

export function databaseFile(config: Config): string {
  return path.resolve(config.dataDir, 'pigeon.sqlite');
}

/**
 * `autoCheckpoint: false` for the server's writer, whose checkpoints run beside it (checkpointer.ts); tools (the CLI)
 * keep SQLite's automatic one, since no timer runs for them. `syncBeside` (the server) at `synchronous=FULL`: the
 * connection runs at NORMAL and a WalSync keeps FULL's promise off the writer's path (wal-sync.ts); `syncCalls`
 * replaces its file calls (tests hold or fail a sync).
 */
export function openDatabase(config: Config, filename = databaseFile(config), options: OpenOptions = {}): Db {
  if (config.database.client === 'postgres') return postgresKnex(postgresUrl(config), config.database.poolSize, MIGRATIONS_DIR);
  const autoCheckpoint = options.autoCheckpoint ?? true;
  // 0700 directory, 0600 database (and so -wal/-shm), whatever the umask.
  ensurePrivateDir(path.dirname(filename));
  ensurePrivateFile(filename);
  const { synchronous, busyTimeoutMs } = config.database;
  // SQLite follows a symbolic link to the database and keeps the WAL beside the file it found: so does the sync.
  const walSync = options.syncBeside && synchronous === 'FULL' ? new WalSync(`${fs.realpathSync(filename)}-wal`, options.syncCalls) : undefined;
  const db = sqliteKnex(filename, 1,
    // busy_timeout first, so the others wait for a lock instead of failing; schema_version reads the database, so
    // the connection holds its shared lock from here on even when journal_mode has just turned a new file to WAL
    // (wal-sync.ts relies on it)
    `PRAGMA busy_timeout = ${busyTimeoutMs}; PRAGMA journal_mode = WAL; PRAGMA schema_version; PRAGMA foreign_keys = ON;` +
    ` PRAGMA synchronous = ${walSync ? 'NORMAL' : synchronous}; ${cachePragmas(WRITER_CACHE_MIB)} PRAGMA journal_size_limit = 67108864;` +
    ` PRAGMA wal_autocheckpoint = ${autoCheckpoint ? 1000 : 0};`,
    (conn) => {
      batchTransactionEnds(conn); // inside beginImmediate's rewrite: what it defers is BEGIN IMMEDIATE
      beginImmediate(conn);
      if (walSync) syncCommits(conn, walSync);
    });
  if (walSync) walSyncs.set(db, walSync);
  return db;
}

/**
 * knex begins every SQLite transaction DEFERRED: it takes the write lock at its first write. In WAL mode a
 * transaction that read first and finds another connection's commit since (a CLI process, a second handle in
 * this one) cannot write at all: SQLite answers SQLITE_BUSY at once, without the busy handler's wait. So a handle
 * that writes begins IMMEDIATE: the lock is taken, or waited for, at BEGIN. (The reader handles never write and
 * keep BEGIN as it is.)
 */
function beginImmediate(conn: SqliteConnection): void {
  for (const method of ['all', 'run'] as const) {
    const plain = conn[method].bind(conn);
    conn[method] = (sql, params, cb) => plain(sql === 'BEGIN;' ? 'BEGIN IMMEDIATE;' : sql, params, cb);
  }
}

interface OpenOptions {
  autoCheckpoint?: boolean;
  syncBeside?: boolean;
  syncCalls?: SyncCalls;
}

const walSyncs = new WeakMap<Db, WalSync>();

/** The WalSync of the server's writer handle (openDatabase's `syncBeside`); undefined otherwise. */
export function walSyncOf(db: Db): WalSync | undefined {
  return walSyncs.get(db);
}

/**
 * The WAL checkpointer's own connection (checkpointer.ts), with the writer's `synchronous`: SQLite syncs the
 * database file at the end of a checkpoint only when the connection that ran it says so.
 */
export function openCheckpointConnection(config: Config, filename = databaseFile(config)): Db {
  const { synchronous, busyTimeoutMs } = config.database;
  return sqliteKnex(filename, 1, `PRAGMA busy_timeout = ${busyTimeoutMs}; PRAGMA synchronous = ${synchronous};`);
}

/**
 * SQLite's memory, bounded so the process stays flat as the database grows (the bench's `queue` section: 10⁶
 * queued and accepts at full speed). Page caches fill as pages are read and written, and every page read
 * through the memory map stays resident too, so with 64 MiB caches on three connections and a 256 MiB map a
 * deep queue took the process from 130 to 460 MB. The file stays in the kernel's page cache either way: a page
 * beyond these is a read() away, not a disk seek.
 */
export const WRITER_CACHE_MIB = 32;
export const READER_CACHE_MIB = 16;
const MMAP_MIB = 64;

/** Page cache (`mib`) and memory map pragmas of a connection. */
export function cachePragmas(mib: number): string {
  return `PRAGMA cache_size = -${mib * 1024}; PRAGMA mmap_size = ${MMAP_MIB * 1024 * 1024};`;
}

/**
 * A knex instance on `filename` with up to `connections` connections, each set up by `pragmas`, reusing its
 * prepared statements (statement-cache.ts) and then wrapped by `wrap`.
 */
export function sqliteKnex(filename: string, connections: number, pragmas: string, wrap?: (conn: ExecConnection) => void): Db {
  return knex({
    client: 'sqlite3',
    connection: { filename },
    useNullAsDefault: true,
    pool: {
      min: 1,
      max: connections,
      afterCreate(conn: ExecConnection, done: (err: Error | null, conn: unknown) => void) {
        cacheStatements(conn);
        wrap?.(conn);
        // a connection that could not be set up is closed here: the pool forgets it without closing it
        conn.exec(pragmas, (err) => (err ? conn.close(() => done(err, conn)) : done(null, conn)));
      },
    },
    migrations: { directory: MIGRATIONS_DIR, loadExtensions: ['.js'] },
  });
}

/** True on PostgreSQL (a handle or a transaction of one): for the few statements that differ. */
export function isPostgres(db: Queryable): boolean {
  return (db.client as { config: { client: unknown } }).config.client === 'pg';
}

/** knex.raw answers the rows as an array on SQLite and as `{ rows }` on PostgreSQL. */
export function rawRows<T>(result: unknown): T[] {
  return Array.isArray(result) ? (result as T[]) : ((result as { rows?: T[] }).rows ?? []);
}

export async function migrateLatest(db: Db): Promise<string[]> {
  const [, applied] = await db.migrate.latest();
  return applied as string[];
}

/** JSON columns: SQLite stores text. */
export const toJson = (v: unknown): string | null => (v === undefined || v === null ? null : JSON.stringify(v));
export function fromJson<T>(v: string | null | undefined, fallback: T): T {
  if (v === null || v === undefined || v === '') return fallback;
  return JSON.parse(v) as T;
}
