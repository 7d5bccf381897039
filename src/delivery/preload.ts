/**
 * Reads for a claimed batch, done once for the batch: which recipients are
 * suppressed and the stored content of each job, with one query each (on the
 * reader connection), instead of two queries per message on its way out.
 * Copies of one send share their content row, so it is read once. Contents
 * over PRELOAD_MAX_BYTES are left to the prepare step, one at a time, so a
 * batch of 50 large messages does not arrive in memory all at once.
 */
import type { Queryable } from '../db';
import { normalizeEmail, suppressedAmong } from '../suppressions/store';
import type { Job } from './types';

export const PRELOAD_MAX_BYTES = 1024 * 1024;

/** `known`: content bytes the caller already holds (a batch just accepted), by content id: not read again. */
export async function preload(db: Queryable, jobs: Job[], known: ReadonlyMap<string, Buffer> = new Map()): Promise<void> {
  if (!jobs.length) return;
  const suppressed = await suppressedAmong(db, jobs.map((j) => ({ accountId: j.accountId, email: j.toEmail })));
  const contents = new Map<string, { raw: Buffer; signed: boolean } | undefined>();
  for (const [id, raw] of known) if (raw.length <= PRELOAD_MAX_BYTES) contents.set(id, { raw, signed: false });
  const ids = [...new Set(jobs.map((j) => j.contentId))].filter((id) => !contents.has(id));
  for (let i = 0; i < ids.length; i += 500) {
    const rows: Array<{ id: string; raw: Buffer | string | null; signed: number | boolean }> = await db('message_contents')
      .whereIn('id', ids.slice(i, i + 500))
      .select('id', 'signed', db.raw('case when size <= ? then raw end as raw', [PRELOAD_MAX_BYTES]));
    for (const r of rows) contents.set(r.id, r.raw === null ? undefined : { raw: Buffer.isBuffer(r.raw) ? r.raw : Buffer.from(r.raw), signed: Boolean(r.signed) });
  }
  for (const job of jobs) {
    // a content id the query did not return has no row (null); one returned without bytes is read later (undefined)
    const content = contents.has(job.contentId) ? contents.get(job.contentId) : null;
    job.preloaded = { suppressed: suppressed.has(`${job.accountId} ${normalizeEmail(job.toEmail)}`), content };
  }
}

/**
 * Preloads asked for while one runs, or in the same turn, go out as one: under load every accept transaction's
 * commit hands the MTA the copies of a dozen sends at once, each asking for its own reads, and one query for
 * all of them costs the reader a dozen times less. Each caller resumes once its own jobs are filled.
 */
export class PreloadBatcher {
  private waiting: Array<{ jobs: Job[]; known: ReadonlyMap<string, Buffer>; done(err?: unknown): void }> = [];
  private running = false;

  constructor(private readonly db: Queryable) {}

  preload(jobs: Job[], known: ReadonlyMap<string, Buffer> = new Map()): Promise<void> {
    if (!jobs.length) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.waiting.push({ jobs, known, done: (err) => (err === undefined ? resolve() : reject(err)) });
      if (!this.running && this.waiting.length === 1) setImmediate(() => void this.run());
    });
  }

  private async run(): Promise<void> {
    if (this.running || !this.waiting.length) return;
    this.running = true;
    const batch = this.waiting;
    this.waiting = [];
    const known = new Map<string, Buffer>();
    for (const w of batch) for (const [id, raw] of w.known) known.set(id, raw);
    try {
      await preload(this.db, batch.flatMap((w) => w.jobs), known);
      for (const w of batch) w.done();
    } catch (err) {
      for (const w of batch) w.done(err ?? new Error('preload failed'));
    } finally {
      this.running = false;
      void this.run(); // what was asked for meanwhile
    }
  }
}
