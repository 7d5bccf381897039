/**
 * Group commit for attempt results. Every result is a write, and with
 * `synchronous=FULL` each commit costs an fsync; the results that finish
 * while the previous commit is on its way are written together in the next
 * one (results.ts makes that a few statements however many there are), so
 * the dispatcher is bound neither by fsyncs nor by statements.
 */
import type { Clock } from '../clock';
import type { Queryable } from '../db';
import { AttemptRecord, Recorded, recordAttempts } from './results';

interface Waiting {
  record: AttemptRecord;
  resolve(value: Recorded | null): void;
  reject(err: unknown): void;
}

/** Results per transaction at most, so one commit stays short. */
const MAX_BATCH = 1000;

export class AttemptRecorder {
  private queue: Waiting[] = [];
  private flushing: Promise<void> | undefined;

  constructor(
    private readonly db: Queryable,
    private readonly clock: Clock,
  ) {}

  record(record: AttemptRecord): Promise<Recorded | null> {
    return new Promise<Recorded | null>((resolve, reject) => {
      this.queue.push({ record, resolve, reject });
      this.flushing ??= this.flush();
    });
  }

  private async flush(): Promise<void> {
    // Let the other answers of this turn of the event loop join the batch.
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (this.queue.length) {
      const batch = this.queue.splice(0, MAX_BATCH);
      try {
        const results = await recordAttempts(this.db, batch.map((w) => w.record), this.clock.now());
        batch.forEach((w, i) => w.resolve(results[i]));
      } catch (err) {
        batch.forEach((w) => w.reject(err));
      }
    }
    this.flushing = undefined;
  }
}
