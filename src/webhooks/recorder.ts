/**
 * Group commit for attempt results. Every result is a write, and with
 * `synchronous=FULL` each commit costs an fsync; committing the results that
 * finished while the previous commit was on disk in one transaction keeps the
 * dispatcher from being bound by fsyncs (the accept path does the same).
 */
import type { Queryable } from '../db';
import { AttemptRecord, AttemptResult, recordAttempts } from './deliveries';

type Recorded = { result: AttemptResult; attempt: number } | null;

interface Waiting {
  record: AttemptRecord;
  resolve(value: Recorded): void;
  reject(err: unknown): void;
}

export class AttemptRecorder {
  private queue: Waiting[] = [];
  private flushing: Promise<void> | undefined;

  constructor(private readonly db: Queryable) {}

  record(record: AttemptRecord): Promise<Recorded> {
    return new Promise<Recorded>((resolve, reject) => {
      this.queue.push({ record, resolve, reject });
      this.flushing ??= this.flush();
    });
  }

  private async flush(): Promise<void> {
    while (this.queue.length) {
      const batch = this.queue.splice(0);
      try {
        const results = await recordAttempts(this.db, batch.map((w) => w.record));
        batch.forEach((w, i) => w.resolve(results[i]));
      } catch (err) {
        batch.forEach((w) => w.reject(err));
      }
    }
    this.flushing = undefined;
  }
}
