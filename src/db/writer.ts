/**
 * The one writer of the hot path. Accept (API and SMTP), the MTA's claims and
 * outcomes, their events, webhook-delivery rows and rollups all hand their
 * writes to `run`; whatever is queued when the writer is free goes into one
 * transaction, so one commit (one fsync under synchronous=FULL) makes many
 * callers' work durable, and the rows they insert go out as multi-row
 * statements (buffer.ts). Each caller's promise settles only after the
 * commit that holds its work, so a 202 or a 250 still means "on disk".
 *
 * A failure must not fail the neighbours: the group is rolled back and split
 * in halves, each committed again, down to the one piece of work that fails,
 * which alone gets the error. Work is therefore written so that running it
 * again after a rollback is safe: ids are chosen before, MTA writes are
 * conditional on the lease.
 */
import type { Db, Tx } from './index';
import { attachBuffer, WriteBuffer } from './buffer';
import { runGroup, type Pending, type Work, type BatchKind } from './group';
import type { CheckpointTurns } from './checkpointer';
import type { WriteOrder } from './write-order';
import type { WalSync } from './wal-sync';
import { openDurableHooks, settleDurableHooks, type DurableHook } from './durable-hooks';

export type { BatchKind, Work } from './group';

/** A scheduled start waiting for the running sync to end, then for batch items to gather (timer). */
interface Gathering {
  timer?: NodeJS.Timeout;
  afterSync(): void;
}

export interface WriterOptions {
  /** Most work (messages, by the callers' weights) in one transaction. */
  maxWeight: number;
  /** How long an idle writer waits for more work before it starts a group (0: the next event-loop turn). */
  windowMs: number;
  /** Each commit: pieces of work and their summed weight (metrics). */
  onCommit?(pieces: number, weight: number): void;
  /**
   * SQLite: the WAL checkpointer (checkpointer.ts), told of every commit; between groups the writer runs a
   * PASSIVE checkpoint on its own connection when it says the WAL must start over. None: SQLite's automatic
   * checkpoint (inside a commit), or PostgreSQL.
   */
  checkpoints?: CheckpointTurns;
  onCheckpointError?(err: unknown): void;
  /**
   * >0: counter additions of committed transactions are summed here and written together at most this often
   * (one upsert per counter row per interval instead of one per transaction: on PostgreSQL every node adds to
   * the same rollup rows, and each upsert holds its row's lock until its commit). A crash loses at most this
   * long of counts. 0: counters are written in the transaction that made them.
   */
  counterFlushMs?: number;
  /** SQLite: the schema's foreign keys, so the kept writes of a transaction go out in waves (write-order.ts) */
  writeOrder?: WriteOrder;
  /**
   * SQLite at FULL: the connection commits at NORMAL and each group's callers are answered after this syncs the
   * WAL, while the next group already runs (wal-sync.ts). None: the COMMIT itself made the group durable.
   */
  walSync?: WalSync;
}

const handles = new WeakMap<Tx, Db>();

/**
 * The app handle whose writer runs `trx`; undefined for any other transaction. Lookups that need not see the
 * transaction's own writes (webhook subscriptions) answer from that app's read caches instead of a SELECT on
 * the writer connection.
 */
export function writerHandleOf(trx: Tx): Db | undefined {
  return handles.get(trx);
}

export class Writer {
  private queue: Pending[] = [];
  private scheduled = false;
  /** the start scheduled waits for the WAL's sync, then for batch items to gather (gatherMs): plain work moves it up */
  private gathering?: Gathering;
  private running = false;
  private idle: Array<() => void> = [];
  /** committed groups whose callers wait for the WAL's sync (walSync) */
  private syncing = 0;
  private closed = false;
  private busyMs = 0;
  private commits = 0;
  /** counter additions of committed transactions not written yet (counterFlushMs) */
  private counters = new WriteBuffer();
  private counterTimer?: NodeJS.Timeout;
  private counterFlush?: Promise<void>;

  constructor(
    private readonly db: Db,
    private readonly options: WriterOptions,
  ) {}

  /** Runs `work` in the next shared transaction; resolves with its result once that transaction committed. */
  run<T>(work: Work<T>, weight = 1): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, weight, resolve: resolve as (v: unknown) => void, reject });
      this.kick(0);
    });
  }

  /** Queues `item` for its kind's next batch; resolves with its own answer once that transaction committed. */
  batch<I, R>(kind: BatchKind<I, R>, item: I, weight = 1): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ batch: { kind: kind as BatchKind<unknown, unknown>, item }, weight, resolve: resolve as (v: unknown) => void, reject });
      this.kick(kind.gatherMs ?? 0);
    });
  }

  /** Waits for work already handed over (and the counters summed so far), then stops: the database may close after this. */
  async close(): Promise<void> {
    await this.drained();
    await this.flushCounters();
    this.closed = true;
    await this.drained();
    await this.options.checkpoints?.close();
  }

  /**
   * Writes the counter additions summed so far now (a read of counters on this node sees its own sends: the
   * analytics, usage and TLS-report reads call this first). Resolves at once when there are none.
   */
  flushCounters(): Promise<void> {
    clearTimeout(this.counterTimer);
    this.counterTimer = undefined;
    if (this.counterFlush) return this.counterFlush.then(() => this.flushCounters());
    if (!this.counters.hasCounters) return Promise.resolve();
    const summed = this.counters;
    this.counters = new WriteBuffer();
    this.counterFlush = this.run((trx) => summed.writeCounters(trx)) // kept until committed: a rerun writes them again
      .catch(() => {
        this.counters.addCountersOf(summed); // not written: added to what came since, tried again later
        this.scheduleCounterFlush();
      })
      .finally(() => (this.counterFlush = undefined));
    return this.counterFlush;
  }

  private scheduleCounterFlush(): void {
    if (this.counterTimer || this.closed) return;
    this.counterTimer = setTimeout(() => void this.flushCounters(), this.options.counterFlushMs);
    this.counterTimer.unref();
  }

  /** Transactions committed so far (the bench divides the messages by it). */
  get commitCount(): number {
    return this.commits;
  }

  /** Time spent in transactions (and the writer's checkpoints) so far: near the wall time, the writer is the limit. */
  get busyTimeMs(): number {
    return this.busyMs;
  }

  /** Resolves when nothing is queued, being written or waiting for its sync (tests, shutdown). */
  drained(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private isIdle(): boolean {
    return !this.running && !this.scheduled && this.queue.length === 0 && this.syncing === 0;
  }

  private settleIdle(): void {
    if (this.isIdle()) for (const resolve of this.idle.splice(0)) resolve();
  }

  /**
   * Schedules a start of the idle writer, after `gatherMs` when no plain work waits (see BatchKind). With the
   * WAL synced beside the writer, those `gatherMs` count from the end of the running sync: items no client
   * waits on then gather as long as they did when the COMMIT itself synced.
   */
  private kick(gatherMs: number): void {
    if (this.running) return; // the running turn takes what is queued next
    if (this.scheduled && !(this.gathering && gatherMs === 0)) return;
    clearTimeout(this.gathering?.timer);
    this.gathering = undefined;
    this.scheduled = true;
    const start = () => {
      this.scheduled = false;
      this.gathering = undefined;
      void this.drain();
    };
    const wait = Math.max(this.options.windowMs, gatherMs);
    if (wait === 0) setImmediate(start);
    else if (gatherMs > 0) {
      const gathering: Gathering = { afterSync: () => (gathering.timer = setTimeout(start, wait)) };
      this.gathering = gathering;
      if (this.syncing === 0) gathering.afterSync();
    } else setTimeout(start, wait);
  }

  /** A sync ended: a gathering that waited for it (kick) starts its time now. */
  private startAfterSync(): void {
    if (this.syncing === 0 && this.gathering && !this.gathering.timer) this.gathering.afterSync();
  }

  /**
   * Commits groups while work is queued. When what is left after a commit is only batch items that may
   * gather (gatherMs), it stops and lets them gather first, as an idle writer would.
   */
  private async drain(): Promise<void> {
    this.running = true;
    let gatherMs = 0;
    try {
      while (this.queue.length) {
        const started = performance.now();
        await this.commit(this.take());
        this.options.checkpoints?.committed();
        if (this.options.checkpoints?.takeWriterTurn()) await this.checkpoint();
        this.busyMs += performance.now() - started;
        gatherMs = this.gatherMsOfQueue();
        if (gatherMs > 0) break;
      }
    } finally {
      this.running = false;
      if (this.queue.length) this.kick(gatherMs);
      else this.settleIdle();
    }
  }

  /** 0 when plain work is queued or a full group is; otherwise the longest gatherMs of the queued kinds. */
  private gatherMsOfQueue(): number {
    let gatherMs = 0;
    let weight = 0;
    for (const p of this.queue) {
      if (!p.batch) return 0;
      weight += p.weight;
      gatherMs = Math.max(gatherMs, p.batch.kind.gatherMs ?? 0);
    }
    return weight >= this.options.maxWeight ? 0 : gatherMs;
  }

  /**
   * Copies what the checkpointer has not yet copied of the WAL into the database file, between two groups
   * (SQLite syncs the WAL before it copies, so no commit is copied unsynced): under a load that never pauses,
   * only a checkpoint on this connection lets its next transaction start the WAL over (checkpointer.ts).
   * PASSIVE never waits for readers.
   */
  private async checkpoint(): Promise<void> {
    try {
      await this.db.raw('PRAGMA wal_checkpoint(PASSIVE)');
    } catch (err) {
      this.options.onCheckpointError?.(err);
    }
  }

  /** The next group: queued work up to maxWeight (always at least one piece). */
  private take(): Pending[] {
    let weight = 0;
    let n = 0;
    while (n < this.queue.length && (n === 0 || weight + this.queue[n].weight <= this.options.maxWeight)) {
      weight += this.queue[n].weight;
      n++;
    }
    return this.queue.splice(0, n);
  }

  private async commit(group: Pending[]): Promise<void> {
    let results: unknown[];
    let hooks: DurableHook[] = [];
    try {
      const deferCounters = (this.options.counterFlushMs ?? 0) > 0;
      let buffer: WriteBuffer | undefined;
      results = await this.db.transaction(async (trx) => {
        buffer = attachBuffer(trx, this.options.writeOrder);
        handles.set(trx, this.db);
        hooks = openDurableHooks(trx);
        const out = await runGroup(trx, group);
        await buffer.flush(trx, !deferCounters);
        this.options.walSync?.claimNextCommit(); // answered below, after the sync
        return out;
      });
      if (deferCounters && buffer?.hasCounters) {
        this.counters.addCountersOf(buffer); // committed: its counts are written with the next flush
        this.scheduleCounterFlush();
      }
    } catch (err) {
      settleDurableHooks(hooks, false);
      if (group.length === 1) return group[0].reject(err);
      const half = Math.ceil(group.length / 2);
      await this.commit(group.slice(0, half));
      await this.commit(group.slice(half));
      return;
    }
    this.commits++;
    this.options.onCommit?.(group.length, group.reduce((s, p) => s + p.weight, 0));
    if (this.options.walSync) return this.answerWhenSynced(this.options.walSync, group, results, hooks);
    settleDurableHooks(hooks, true);
    group.forEach((p, i) => p.resolve(results[i]));
  }

  /** Answers a committed group once the WAL is synced; the writer does not wait (see WriterOptions.walSync). */
  private answerWhenSynced(walSync: WalSync, group: Pending[], results: unknown[], hooks: DurableHook[]): void {
    this.syncing++;
    walSync.sync().then(
      () => {
        settleDurableHooks(hooks, true);
        group.forEach((p, i) => p.resolve(results[i]));
      },
      (err: unknown) => {
        settleDurableHooks(hooks, false);
        group.forEach((p) => p.reject(err));
      },
    ).finally(() => {
      this.syncing--;
      this.startAfterSync();
      this.settleIdle();
    });
  }
}
