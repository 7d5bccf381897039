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
import type { CheckpointTurns } from './checkpointer';
import type { WriteOrder } from './write-order';

export type Work<T> = (trx: Tx) => Promise<T>;

/**
 * Work that goes better many at once: every item of one kind queued for a
 * transaction reaches `run` together (after the plain work of that
 * transaction), so n outcomes can be one UPDATE instead of n. `run` answers
 * each item in order.
 */
export interface BatchKind<I, R> {
  readonly name: string;
  /**
   * How long an idle writer that holds only items of batch kinds waits for more before it starts (the
   * longest of their gatherMs); plain work arriving meanwhile starts it at once. For items no client waits
   * on (delivery outcomes): each commit then carries more of them, and every commit saved is an fsync.
   */
  readonly gatherMs?: number;
  run(trx: Tx, items: I[]): Promise<R[]>;
}

interface Pending {
  work?: Work<unknown>;
  batch?: { kind: BatchKind<unknown, unknown>; item: unknown };
  weight: number;
  resolve(value: unknown): void;
  reject(err: unknown): void;
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
  /** the start scheduled waits for batch items to gather (gatherMs): plain work moves it up */
  private gathering?: NodeJS.Timeout;
  private running = false;
  private idle: Array<() => void> = [];
  private closed = false;
  private busyMs = 0;
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

  /** Time spent in transactions (and the writer's checkpoints) so far: near the wall time, the writer is the limit. */
  get busyTimeMs(): number {
    return this.busyMs;
  }

  /** Resolves when nothing is queued or being written (tests, shutdown). */
  drained(): Promise<void> {
    if (!this.running && !this.scheduled && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** Schedules a start of the idle writer, after `gatherMs` when no plain work waits (see BatchKind). */
  private kick(gatherMs: number): void {
    if (this.running) return; // the running turn takes what is queued next
    if (this.scheduled && !(this.gathering && gatherMs === 0)) return;
    clearTimeout(this.gathering);
    this.gathering = undefined;
    this.scheduled = true;
    const start = () => {
      this.scheduled = false;
      this.gathering = undefined;
      void this.drain();
    };
    const wait = Math.max(this.options.windowMs, gatherMs);
    if (wait === 0) setImmediate(start);
    else if (gatherMs > 0) this.gathering = setTimeout(start, wait);
    else setTimeout(start, wait);
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
      else for (const resolve of this.idle.splice(0)) resolve();
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
   * (their callers were answered): under a load that never pauses, only a checkpoint on this connection lets
   * its next transaction start the WAL over (checkpointer.ts). PASSIVE never waits for readers.
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
    try {
      const deferCounters = (this.options.counterFlushMs ?? 0) > 0;
      let buffer: WriteBuffer | undefined;
      results = await this.db.transaction(async (trx) => {
        buffer = attachBuffer(trx, this.options.writeOrder);
        handles.set(trx, this.db);
        const out = await runGroup(trx, group);
        await buffer.flush(trx, !deferCounters);
        return out;
      });
      if (deferCounters && buffer?.hasCounters) {
        this.counters.addCountersOf(buffer); // committed: its counts are written with the next flush
        this.scheduleCounterFlush();
      }
    } catch (err) {
      if (group.length === 1) return group[0].reject(err);
      const half = Math.ceil(group.length / 2);
      await this.commit(group.slice(0, half));
      await this.commit(group.slice(half));
      return;
    }
    this.options.onCommit?.(group.length, group.reduce((s, p) => s + p.weight, 0));
    group.forEach((p, i) => p.resolve(results[i]));
  }
}

/** Plain work in the order it came, then each batch kind once with all its items; answers in the group's order. */
async function runGroup(trx: Tx, group: Pending[]): Promise<unknown[]> {
  const out: unknown[] = new Array(group.length);
  const batches = new Map<BatchKind<unknown, unknown>, number[]>();
  for (let i = 0; i < group.length; i++) {
    const { work, batch } = group[i];
    if (work) out[i] = await work(trx);
    else if (batch) {
      const list = batches.get(batch.kind);
      if (list) list.push(i);
      else batches.set(batch.kind, [i]);
    }
  }
  for (const [kind, indexes] of batches) {
    const answers = await kind.run(trx, indexes.map((i) => group[i].batch!.item));
    indexes.forEach((i, j) => (out[i] = answers[j]));
  }
  return out;
}
