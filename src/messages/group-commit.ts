/**
 * Group commit: accepted sends that arrive together are written in one
 * transaction, so one fsync makes many messages durable. Each caller's promise
 * settles only after the commit that holds its writes, so "202 Accepted" still
 * means "on disk". While a commit is in flight new work queues up and goes
 * into the next one; an idle committer starts a group on the next event-loop
 * turn (or after `windowMs`).
 *
 * A failure inside a group must not fail its neighbours: the group is rolled
 * back and each item is retried in a transaction of its own. Work functions
 * therefore only write (their ids are chosen before they run), so running one
 * again after a rollback is safe.
 */
import type { Db, Tx } from '../db';

export type Work = (trx: Tx) => Promise<void>;

interface Item {
  weight: number;
  work: Work;
  resolve(): void;
  reject(err: unknown): void;
}

export interface GroupCommitOptions {
  enabled: boolean;
  windowMs: number;
  /** Sum of item weights (messages) per transaction. */
  maxWeight: number;
  /** Called with the number of items of each committed group (metrics). */
  onCommit?(items: number, weight: number): void;
}

export class GroupCommitter {
  private queue: Item[] = [];
  private scheduled = false;
  private running = false;

  constructor(
    private readonly db: Db,
    private readonly options: GroupCommitOptions,
  ) {}

  /** Runs `work` in a transaction shared with other submissions; resolves after commit. */
  submit(weight: number, work: Work): Promise<void> {
    if (!this.options.enabled) {
      return this.db.transaction(work).then(() => this.options.onCommit?.(1, weight));
    }
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ weight, work, resolve, reject });
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
  private take(): Item[] {
    let weight = 0;
    let n = 0;
    while (n < this.queue.length && (n === 0 || weight + this.queue[n].weight <= this.options.maxWeight)) {
      weight += this.queue[n].weight;
      n++;
    }
    return this.queue.splice(0, n);
  }

  private async commit(group: Item[]): Promise<void> {
    try {
      await this.db.transaction(async (trx) => {
        for (const item of group) await item.work(trx);
      });
      this.options.onCommit?.(group.length, group.reduce((s, i) => s + i.weight, 0));
      for (const item of group) item.resolve();
    } catch (err) {
      if (group.length === 1) return group[0].reject(err);
      for (const item of group) {
        try {
          await this.db.transaction(item.work);
          this.options.onCommit?.(1, item.weight);
          item.resolve();
        } catch (itemErr) {
          item.reject(itemErr);
        }
      }
    }
  }
}
