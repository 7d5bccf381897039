/**
 * Group commit: accepted sends that arrive together are written in one
 * transaction, so one fsync makes many messages durable, and the writer gets
 * the whole group at once, so it can insert a table's rows for all of them in
 * one statement. Each caller's promise settles only after the commit that
 * holds its writes, so "202 Accepted" still means "on disk". While a commit is
 * in flight new items queue up and go into the next one; an idle committer
 * starts a group on the next event-loop turn (or after `windowMs`).
 *
 * A failure inside a group must not fail its neighbours: the group is rolled
 * back and each item is written again in a transaction of its own. Writers
 * therefore only insert rows whose ids were chosen beforehand, so writing an
 * item again after a rollback is safe.
 */
import type { Db, Tx } from '../db';

export type GroupWriter<T> = (trx: Tx, items: T[]) => Promise<void>;

interface Pending<T> {
  item: T;
  weight: number;
  resolve(): void;
  reject(err: unknown): void;
}

export interface GroupCommitOptions {
  enabled: boolean;
  windowMs: number;
  /** Sum of item weights (messages) per transaction. */
  maxWeight: number;
  /** Called with the number of items and their weight for each committed transaction (metrics). */
  onCommit?(items: number, weight: number): void;
}

export class GroupCommitter<T> {
  private queue: Array<Pending<T>> = [];
  private scheduled = false;
  private running = false;

  constructor(
    private readonly db: Db,
    private readonly options: GroupCommitOptions,
    private readonly write: GroupWriter<T>,
  ) {}

  /** Writes `item` in a transaction shared with other submissions; resolves after commit. */
  submit(weight: number, item: T): Promise<void> {
    if (!this.options.enabled) return this.commitAlone({ item, weight, resolve: () => undefined, reject: () => undefined }, true);
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ item, weight, resolve, reject });
      this.kick();
    });
  }

  private kick(): void {
    if (this.running || this.scheduled) return;
    this.scheduled = true;
    const start = () => {
      this.scheduled = false;
      void this.drain();
    };
    if (this.options.windowMs > 0) setTimeout(start, this.options.windowMs);
    else setImmediate(start);
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length) await this.commit(this.take());
    } finally {
      this.running = false;
    }
  }

  /** The next group: queued items up to maxWeight (always at least one). */
  private take(): Array<Pending<T>> {
    let weight = 0;
    let n = 0;
    while (n < this.queue.length && (n === 0 || weight + this.queue[n].weight <= this.options.maxWeight)) {
      weight += this.queue[n].weight;
      n++;
    }
    return this.queue.splice(0, n);
  }

  private async commit(group: Array<Pending<T>>): Promise<void> {
    if (group.length === 1) return this.commitAlone(group[0], false);
    try {
      await this.db.transaction((trx) => this.write(trx, group.map((p) => p.item)));
    } catch {
      for (const p of group) await this.commitAlone(p, false);
      return;
    }
    this.options.onCommit?.(group.length, group.reduce((s, p) => s + p.weight, 0));
    for (const p of group) p.resolve();
  }

  /** One item in its own transaction; `rethrow` for direct callers, else settle its promise. */
  private async commitAlone(p: Pending<T>, rethrow: boolean): Promise<void> {
    try {
      await this.db.transaction((trx) => this.write(trx, [p.item]));
    } catch (err) {
      if (rethrow) throw err;
      return p.reject(err);
    }
    this.options.onCommit?.(1, p.weight);
    p.resolve();
  }
}
