/**
 * SQLite WAL checkpoints off the commit path.
 *
 * A checkpoint copies the pages the WAL holds into the database file and
 * syncs it: at a few hundred messages a second that is 10–100 ms of I/O every
 * second. Run on the writer's connection (as it once was), every commit
 * queued behind it waited that long, which was most of the API's accept p99
 * at a moderate load. So it runs here, on a connection of its own, on a
 * timer: WAL mode lets a PASSIVE checkpoint copy committed frames while the
 * writer goes on committing.
 *
 * What only the writer can do is start the WAL over: SQLite rewinds it when
 * a write transaction begins while every frame has been copied. After a quiet
 * moment that happens by itself. Under a load that never pauses, each
 * checkpoint here ends a few commits behind, and the file would grow without
 * end; so once it holds `restartFrames` frames, the writer runs one more
 * PASSIVE checkpoint on its own connection between two groups. That one
 * copies only the frames written since the last one here (the rest are
 * copied already), so the writer pauses for a sync, not for the whole copy,
 * and its next transaction rewinds the WAL. When a checkpoint here fails,
 * the writer takes the turn too (as it did before this connection existed).
 *
 * The connection has the writer's `synchronous` setting: SQLite syncs the
 * database file before it lets the WAL be rewound, so the frames a rewind
 * overwrites are on disk first.
 */
import type { Db } from './index';

export interface CheckpointerOptions {
  /** How often to checkpoint while commits happen. */
  intervalMs: number;
  /** WAL frames (pages) past which the writer's own connection checkpoints, so the WAL starts over. */
  restartFrames: number;
  onError(err: unknown): void;
}

/** What the writer asks between its groups (writer.ts). */
export interface CheckpointTurns {
  /** A transaction committed: the WAL grew. */
  committed(): void;
  /** Whether the WAL has grown past its bound (or the last checkpoint beside it failed) and the writer's connection must checkpoint now; true once. */
  takeWriterTurn(): boolean;
  /** The writer has stopped: the last checkpoint finishes and the connection closes. */
  close(): Promise<void>;
}

/** SQLite's answer to a checkpoint: frames in the WAL (-1 when not in WAL mode), and how many are copied. */
export interface WalState {
  log: number;
  checkpointed: number;
}

export class WalCheckpointer implements CheckpointTurns {
  private timer?: NodeJS.Timeout;
  private dirty = false;
  private writerTurn = false;
  private running?: Promise<WalState | undefined>;
  private closed = false;

  constructor(
    private readonly db: Db,
    private readonly options: CheckpointerOptions,
  ) {}

  committed(): void {
    this.dirty = true;
    if (!this.timer && !this.closed) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.runOnce();
      }, this.options.intervalMs);
      this.timer.unref();
    }
  }

  takeWriterTurn(): boolean {
    const due = this.writerTurn;
    this.writerTurn = false;
    return due;
  }

  /** One PASSIVE checkpoint on this connection (the timer's; tests call it directly); undefined when it failed. */
  runOnce(): Promise<WalState | undefined> {
    this.running ??= this.checkpoint().finally(() => (this.running = undefined));
    return this.running;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.running;
    await this.db.destroy();
  }

  private async checkpoint(): Promise<WalState | undefined> {
    this.dirty = false;
    let state: WalState | undefined;
    try {
      [state] = (await this.db.raw('PRAGMA wal_checkpoint(PASSIVE)')) as WalState[];
      if (state && state.log >= this.options.restartFrames) this.writerTurn = true;
    } catch (err) {
      this.options.onError(err);
      // Nothing was copied here (a connection that cannot open, I/O errors): the writer's connection checkpoints
      // instead, or the WAL would grow without bound for as long as this one keeps failing.
      this.writerTurn = true;
    }
    if (this.dirty) this.committed(); // commits came meanwhile: their frames are copied next time
    return state;
  }
}
