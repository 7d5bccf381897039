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
/** After a lease check failed while riding, batches take the answered way this long (write). */
export const RIDE_PAUSE_MS = 10_000;

export class AttemptRecorder {
  private queue: Waiting[] = [];
  private flushing: Promise<void> | undefined;
  /** clock time before which batches do not ride (write) */
  private rideAfter = 0;

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
        const results = await this.write(records, this.clock.now());
        batch.forEach((w, i) => w.resolve(results[i]));
      } catch (err) {
        batch.forEach((w) => w.reject(err));
      }
    }
    this.flushing = undefined;
  }

  /**
   * Rides with the COMMIT (results.ts) unless a lease check failed lately. Riding checks the leases but cannot
   * say which failed: the batch is then written again the way that answers each row. A failed check rolled back
   * the whole writer group, neighbours included (the writer splits it and runs them again), so after one (a
   * webhook deleted with attempts in flight) batches take the answered way for a while.
   */
  private write(records: AttemptRecord[], at: number): Promise<Array<Recorded | null>> {
    const answered = () => this.writer.run((trx) => recordAttempts(trx, records, at), records.length);
    if (at < this.rideAfter) return answered();
    return this.writer.run((trx) => recordAttempts(trx, records, at, true), records.length).catch((err: unknown) => {
      if (!leaseCheckFailed(err)) throw err;
      this.rideAfter = this.clock.now() + RIDE_PAUSE_MS;
      return answered();
    });
  }
}
