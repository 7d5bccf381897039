/**
 * The COMMIT's fsync beside the writer (SQLite, `database.synchronous=FULL`).
 *
 * At FULL, SQLite fsyncs the WAL inside every COMMIT, and the one writer
 * (writer.ts) cannot start its next transaction until that returns: 1.5 ms on
 * a quiet disk, up to 15 ms on a busy one, plus the trip back through the
 * event loop. The server's writer connection therefore runs at NORMAL (SQLite
 * writes the WAL frames of a commit but does not sync them) and this module
 * keeps FULL's promise itself: no caller hears of a commit until an
 * fdatasync of the WAL file that began after that commit has returned. The
 * kernel syncs a file's dirty pages whichever descriptor asks, so our own
 * descriptor of the `-wal` file covers the frames SQLite wrote through its.
 *
 * The writer claims its own COMMITs (`claimNextCommit`) and answers its
 * callers after `sync()` while its next transaction already runs: many
 * commits share one fdatasync, and none waits for it. Every other commit on
 * the connection (routes and workers that write directly, migrations) is held
 * back by `syncCommits` until a sync covers it, so a `201` means "on disk"
 * exactly as before.
 *
 * What changes: other connections (the reader, the MTA's reads) may see a
 * commit a few milliseconds before it is on disk. After a power loss such a
 * commit can be gone although its message was already delivered; its client
 * had no answer and sends again, a duplicate that at-least-once allows. SQLite
 * keeps the file consistent at NORMAL; checkpoints still sync the WAL before
 * they copy it and the database file before the WAL starts over.
 *
 * A failed fdatasync is final: Linux may mark the pages clean anyway, so a
 * later sync that succeeds proves nothing. Every later sync fails with the
 * same error, and every write on the connection is refused, until the process
 * restarts (and SQLite recovers from the WAL that is really on disk). A failed
 * open or fstat of the WAL proves nothing lost: it fails the callers of that
 * sync only, and the next sync tries again.
 */
import fs from 'node:fs';

type Callback = (this: unknown, err: Error | null, rows?: unknown) => void;

/** The parts of a sqlite3 connection `syncCommits` wraps (after statement-cache.ts has). */
export interface CommittingConnection {
  all(sql: string, params: unknown, cb: Callback): unknown;
  run(sql: string, params: unknown, cb: Callback): unknown;
  close(cb?: (err: Error | null) => void): unknown;
}

/** The file calls a WalSync makes (tests hold or fail a sync through these). */
export interface SyncCalls {
  open(file: string): Promise<number>;
  fdatasync(fd: number): Promise<void>;
  /** Links to the open file: 0 once SQLite deleted the WAL (the last connection closed) */
  links(fd: number): Promise<number>;
  close(fd: number): Promise<void>;
}

/** The real calls, on the file system. */
export const walFileCalls: SyncCalls = {
  open: (file) => promised<number>((cb) => fs.open(file, 'r', cb)),
  fdatasync: (fd) => promised<void>((cb) => fs.fdatasync(fd, cb)),
  links: (fd) => promised<fs.Stats>((cb) => fs.fstat(fd, cb)).then((s) => s.nlink),
  close: (fd) => promised<void>((cb) => fs.close(fd, cb)),
};

export class WalSync {
  private fd?: number;
  private running?: Promise<void>;
  /** the sync that starts when the running one ends: callers that came meanwhile share it */
  private queued?: Promise<void>;
  private failed?: Error;
  private claimed = false;
  /** connections whose commits this syncs that are open (syncCommits attached them, they have not closed) */
  private connections = 0;
  /**
   * Whether the WAL under `fd` may have been deleted since an fstat last found it linked. SQLite deletes the WAL
   * only when the last connection to the database closes: in WAL mode a connection that has read the database
   * keeps a shared lock on the file, and another's close is then not the last. Ours have: their set-up pragmas
   * (journal_mode among them) run before any statement reaches syncCommits, which reports the first (holding).
   * So once an fstat found the file linked while one of ours held that lock and none was closing, from before
   * the fstat until after it, the descriptor stays the WAL's until one of ours begins to close; until then the
   * syncs skip the fstat (one trip to the thread pool less per sync).
   */
  private mayBeDeleted = true;
  /** counts the closes begun: a check spanning one proves nothing */
  private changes = 0;
  /** connections that began to close (closing) and have not finished (close) */
  private closingNow = 0;
  /** open connections that have run a statement (holding), so hold the shared lock */
  private holders = 0;
  /** Told once, when an fdatasync fails (the app logs it). */
  onFailure?: (err: Error) => void;

  /** `walFile`: the WAL of the database file as SQLite resolved it (symbolic links followed, see openDatabase). */
  constructor(
    private readonly walFile: string,
    private readonly calls: SyncCalls = walFileCalls,
  ) {}

  /** Resolves once an fdatasync of the WAL that began after this call has returned. */
  sync(): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    if (!this.running) {
      this.running = this.syncNow().finally(() => (this.running = undefined));
      return this.running;
    }
    this.queued ??= this.running.catch(() => {}).then(() => {
      this.queued = undefined;
      return this.sync();
    });
    return this.queued;
  }

  /** The next COMMIT on the connection is the writer's, which answers its callers after `sync()` itself. */
  claimNextCommit(): void {
    this.claimed = true;
  }

  /** Whether the COMMIT that just ended was claimed (the claim is used up either way). */
  takeClaim(): boolean {
    const claimed = this.claimed;
    this.claimed = false;
    return claimed;
  }

  /** Refuses work once an fdatasync has failed (see the module comment). */
  get failure(): Error | undefined {
    return this.failed;
  }

  /** A connection opened on the database (the pool made one): its commits are synced from now on. */
  attach(): void {
    this.connections++;
  }

  /** An attached connection's first statement succeeded: it holds the shared lock until it closes. */
  holding(): void {
    this.holders++;
  }

  /**
   * A connection is about to close (before SQLite closes it, which may delete the WAL); close() follows. `held`:
   * it had run a statement (holding).
   */
  closing(held: boolean): void {
    this.closingNow++;
    if (held) this.holders = Math.max(0, this.holders - 1);
    this.changes++;
    this.mayBeDeleted = true;
  }

  /**
   * The connection is closing: the syncs under way end, then the descriptor goes. Closing the last connection
   * checkpoints the WAL into the database file, syncs it and deletes the WAL, so a missing WAL is no error now.
   */
  async close(): Promise<void> {
    this.connections = Math.max(0, this.connections - 1);
    this.closingNow = Math.max(0, this.closingNow - 1);
    while (this.running || this.queued) await (this.queued ?? this.running)!.catch(() => {});
    await this.dropFd();
  }

  private async syncNow(): Promise<void> {
    try {
      const fd = await this.walFd();
      if (fd === undefined) return; // closed, and no WAL: every commit is in the database file, synced at the close
      if (!this.mayBeDeleted) return await this.fdatasync(fd);
      const changes = this.canTrustLink ? this.changes : -1;
      // Both settle before either answers: no fdatasync may outlive its sync (a queued one would overlap it).
      const [synced, links] = await Promise.allSettled([this.fdatasync(fd), this.calls.links(fd)]);
      if (synced.status === 'rejected') throw synced.reason;
      if (links.status === 'rejected') throw links.reason;
      if (links.value > 0) {
        if (changes === this.changes && this.canTrustLink) this.mayBeDeleted = false; // see mayBeDeleted
        return;
      }
      // SQLite deleted that WAL (every connection closed once) and may write a new one: sync that file instead.
      await this.dropFd();
      const again = await this.walFd();
      if (again !== undefined) await this.fdatasync(again);
    } finally {
      // a sync after the close keeps no descriptor (a queued one that will run reuses it)
      if (!this.connected && (!this.queued || this.failed)) await this.dropFd();
    }
  }

  private get connected(): boolean {
    return this.connections > 0;
  }

  /** One of ours holds the lock and none is closing: a link found now lasts until `changes` moves (mayBeDeleted). */
  private get canTrustLink(): boolean {
    return this.holders > 0 && this.closingNow === 0;
  }

  /** Only a failed fdatasync is final; a failed open or fstat fails this sync's callers alone. */
  private async fdatasync(fd: number): Promise<void> {
    try {
      await this.calls.fdatasync(fd);
    } catch (err) {
      if (!this.failed) {
        this.failed = err instanceof Error ? err : new Error(String(err));
        this.onFailure?.(this.failed);
      }
      throw this.failed;
    }
  }

  private async walFd(): Promise<number | undefined> {
    if (this.fd !== undefined) return this.fd;
    try {
      this.fd = await this.calls.open(this.walFile);
      return this.fd;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      if (!this.connected) return undefined;
      // A commit was made on an open connection, so its WAL exists: SQLite writes it somewhere else.
      throw new Error(`the WAL ${this.walFile} is missing while its connection is open: the commit is not known to be on disk`);
    }
  }

  private async dropFd(): Promise<void> {
    const fd = this.fd;
    this.fd = undefined;
    if (fd !== undefined) await this.calls.close(fd).catch(() => {});
  }
}

/** What a statement does to the connection's transaction, read from its text (knex sends BEGIN; and COMMIT;). */
type Effect = 'begin' | 'commit' | 'rollback' | 'inside' | 'read' | 'write';

function effectOf(sql: string, inTransaction: boolean): Effect {
  if (/^\s*begin\b/i.test(sql)) return 'begin';
  if (/^\s*(commit|end)\b/i.test(sql)) return 'commit';
  if (/^\s*rollback\b(?!\s+to\b)/i.test(sql)) return 'rollback';
  if (inTransaction) return 'inside';
  // A statement outside a transaction commits on its own, unless it only reads. A checkpoint syncs what it copies.
  return /^\s*(select\b|pragma\s+wal_checkpoint\b)/i.test(sql) ? 'read' : 'write';
}

/**
 * Holds each commit's callback on `conn` until `walSync` has synced it: an explicit COMMIT (unless the writer
 * claimed it) and every statement that commits on its own. A failed sync answers with its error instead.
 */
export function syncCommits(conn: CommittingConnection, walSync: WalSync): void {
  let inTransaction = false;
  // A statement succeeded here: after the set-up pragmas (sqliteKnex's afterCreate), so the connection holds the
  // database's shared lock (WalSync.holding).
  let holds = false;
  let closed = false; // a statement answered after the close began must not count the connection again
  const wrap = (method: 'all' | 'run') => {
    const plain = conn[method].bind(conn);
    return (sql: string, params: unknown, cb: Callback) => {
      if (typeof cb !== 'function') return plain(sql, params, cb);
      const effect = effectOf(sql, inTransaction);
      const failure = effect === 'begin' || effect === 'write' ? walSync.failure : undefined;
      if (failure) return process.nextTick(() => cb.call(undefined, failure));
      return plain(sql, params, function (this: unknown, err, rows) {
        if (!err && !holds && !closed) {
          holds = true;
          walSync.holding();
        }
        if (effect === 'begin' && !err) inTransaction = true;
        // A failed COMMIT mostly rolls back by itself (SQLite does for all but SQLITE_BUSY); when the transaction
        // did stay open, the statements after it are taken for writes of their own and synced, which is safe.
        if (effect === 'rollback' || effect === 'commit') inTransaction = false;
        if (effect === 'rollback') walSync.takeClaim(); // a claim is for the transaction it was made in only
        let mustSync = effect === 'write' && !err;
        if (effect === 'commit') mustSync = !walSync.takeClaim() && !err;
        if (!mustSync) return cb.call(this, err, rows);
        walSync.sync().then(() => cb.call(this, null, rows), (syncErr: Error) => cb.call(this, syncErr));
      });
    };
  };
  walSync.attach();
  conn.all = wrap('all');
  conn.run = wrap('run');
  const close = conn.close.bind(conn);
  conn.close = (cb?: (err: Error | null) => void) => {
    walSync.closing(holds);
    holds = false;
    closed = true;
    return close((err) => void walSync.close().then(() => cb?.(err)));
  };
}

function promised<T>(start: (cb: (err: NodeJS.ErrnoException | null, value: T) => void) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => start((err, value) => (err ? reject(err) : resolve(value))));
}
