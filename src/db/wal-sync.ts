/**
 * Commits made durable beside the writer (SQLite, `synchronous = FULL`).
 *
 * With `synchronous = FULL` SQLite syncs the WAL inside every COMMIT, so the
 * one writer connection waits for the disk before it can start its next
 * transaction: 1.5 ms on a quiet disk here, 15 ms and more when it is busy,
 * in series with every other commit. Instead the writer's connection runs
 * with `synchronous = NORMAL` (a COMMIT writes the WAL frames but does not
 * sync them) and, after each COMMIT, asks this class for an fdatasync of the
 * WAL file; the transaction's callers are answered only when a sync that
 * began after their COMMIT has finished. The writer meanwhile goes on with
 * the next transaction, and commits that finish while a sync runs share the
 * next one.
 *
 * What a caller is told holds as under FULL: a 202 or a 250 still means the
 * WAL frames of its transaction are on stable storage, so an accepted
 * message survives power loss. SQLite itself syncs the WAL before a
 * checkpoint copies it into the database file, and the WAL header when it
 * starts the file over, under NORMAL as under FULL. What differs: another
 * connection (a reader, the MTA's claim) can see a transaction for the
 * milliseconds before its sync; a power loss in them loses it with its
 * callers never answered, while what it started (a claimed message sent)
 * may already have happened: at-least-once allows that, as it allows a
 * resend after a lost outcome.
 *
 * A sync that fails fails every later caller too, until a restart: Linux may
 * drop the pages whose write-back failed and report that once, so a later
 * fdatasync succeeds while frames of the WAL never reached the disk, and
 * recovery after a power loss stops at them, dropping every frame after.
 * (Under FULL, SQLite treats a failed sync as a failed COMMIT and writes the
 * next one over those frames; here they are committed and chained to.)
 *
 * The WAL file stays the same file while the writer's connection is open
 * (SQLite removes it only when the last connection closes); it is opened on
 * the first sync, after the first commit created it.
 */
import fs from 'node:fs';

type Waiter = { resolve(): void; reject(err: unknown): void };

export class WalSync {
  private fd: number | undefined;
  private waiting: Waiter[] = [];
  private running: Promise<void> | undefined;
  /** the first sync that failed: nothing written since can be vouched for (see above) */
  private failed: unknown;

  constructor(
    private readonly walFile: string,
    /** the sync itself (fdatasync of the file), for tests to watch */
    private readonly sync: (fd: number) => Promise<void> = fdatasync,
  ) {}

  /** Resolves once a sync of the WAL that began after this call has finished. */
  durable(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      this.kick();
    });
  }

  private kick(): void {
    if (this.running) return;
    this.running = this.run().finally(() => {
      this.running = undefined;
      if (this.waiting.length) this.kick(); // asked for after the loop's last look
    });
  }

  /** Waits for the syncs asked for, then closes the file. */
  async close(): Promise<void> {
    while (this.running) await this.running;
    if (this.fd !== undefined) fs.closeSync(this.fd);
    this.fd = undefined;
  }

  private async run(): Promise<void> {
    while (this.waiting.length) {
      const batch = this.waiting.splice(0);
      try {
        if (this.failed !== undefined) throw this.failed;
        this.fd ??= fs.openSync(this.walFile, 'r');
        await this.sync(this.fd).catch((err: unknown) => {
          this.failed = err;
          throw err;
        });
        for (const w of batch) w.resolve();
      } catch (err) {
        for (const w of batch) w.reject(err);
      }
    }
  }
}

function fdatasync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.fdatasync(fd, (err) => (err ? reject(err) : resolve())));
}
