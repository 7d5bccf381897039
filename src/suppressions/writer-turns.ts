/**
 * Takes turns at the database with everyone else. The appliance has one
 * SQLite connection, so a request makes its queries one after another and
 * queues for the connection each time; if an upload grabbed it again right
 * after each batch, a request of three queries would wait three batches.
 * Before each batch the upload therefore waits until nobody else has used
 * the database for QUIET_MS — but never longer than its last batch took, so
 * under steady traffic it still gets about half of the writer's time.
 */
import { performance } from 'node:perf_hooks';
import type { Db } from '../db';

const QUIET_MS = 15;
const MAX_WAIT_MS = 1000;

/** The part of tarn's pool (knex's connection pool) read here. */
interface PoolCounts {
  numUsed(): number;
  numPendingAcquires(): number;
}

export class WriterTurns {
  private lastOtherQuery = -Infinity;
  private inBatch = false;
  private lastBatchMs = 0;
  private readonly onQuery = () => {
    if (!this.inBatch) this.lastOtherQuery = performance.now();
  };

  constructor(private readonly db: Db) {
    for (const event of ['query', 'query-response', 'query-error']) db.on(event, this.onQuery);
  }

  /** Runs `batch` once others have had their turn; answers how long it held the database (ms). */
  async run(batch: () => Promise<unknown>): Promise<number> {
    await this.othersFirst();
    const started = performance.now();
    this.inBatch = true;
    try {
      await batch();
      return performance.now() - started;
    } finally {
      this.inBatch = false;
      this.lastBatchMs = performance.now() - started;
    }
  }

  close(): void {
    for (const event of ['query', 'query-response', 'query-error']) this.db.off(event, this.onQuery);
  }

  private async othersFirst(): Promise<void> {
    const pool = (this.db.client as { pool?: PoolCounts }).pool;
    const until = performance.now() + Math.min(Math.max(this.lastBatchMs, QUIET_MS), MAX_WAIT_MS);
    for (;;) {
      const now = performance.now();
      const busy = pool ? pool.numUsed() > 0 || pool.numPendingAcquires() > 0 : false;
      const quietFor = now - this.lastOtherQuery;
      if ((!busy && quietFor >= QUIET_MS) || now >= until) return;
      await new Promise((resolve) => setTimeout(resolve, busy ? 2 : QUIET_MS - quietFor));
    }
  }
}
