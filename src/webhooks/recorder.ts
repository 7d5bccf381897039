/**
 * Batches attempt results. The results that finish while the previous batch is
 * being written go together in the next one (results.ts makes that a few
 * statements however many there are), and each batch joins the shared writer's
 * next transaction (db/writer.ts): the dispatcher is bound neither by fsyncs nor
 * by statements, and its commits never hold the writer's connection through a
 * sync of their own. A batch alone in its transaction is one trip to SQLite's
 * thread (results.ts).
 */
import type { Clock } from '../clock';
import type { Writer } from '../db/writer';
import { AttemptRecord, Recorded, leaseCheckFailed, recordAttempts } from './results';

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
    private readonly writer: Writer,
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
        const records = batch.map((w) => w.record);
        const at = this.clock.now();
        // riding with the COMMIT checks the leases but cannot say which failed: then the batch is written again, row by row's answer
        const results = await this.writer.run((trx) => recordAttempts(trx, records, at, true), batch.length).catch((err: unknown) => {
          if (!leaseCheckFailed(err)) throw err;
          return this.writer.run((trx) => recordAttempts(trx, records, at), batch.length);
        });
        batch.forEach((w, i) => w.resolve(results[i]));
      } catch (err) {
        batch.forEach((w) => w.reject(err));
      }
    }
    this.flushing = undefined;
  }
}
