/**
 * Suppression list upload: a CSV file streamed from disk through csv-parse
 * into the list. All or nothing without holding the database: rows are
 * written in transactions of suppressions.uploadBatchRows, tagged with the
 * upload's id, and stay invisible until one single-row commit makes the whole
 * file visible (upload-state.ts). Between batches the writer is free for other
 * accounts and the event loop gets a turn. A failure (bad file, the client
 * gone, shutdown) removes the tagged rows again. Memory stays flat; duplicates
 * are told apart through the database: an address already in the list with
 * this upload's tag was added by an earlier row of the same file.
 *
 * Layout: one address per row, in the first column or in a column named
 * `email` (also `email_address`, `e-mail`, `address`). The first row is a
 * header when none of its cells contains '@'. With a header, a `reason`
 * column sets a per-row reason; empty cells fall back to the form's reason.
 */
import fs from 'node:fs';
import { parse, CsvError } from 'csv-parse';
import { rawRows, type Db } from '../db';
import { newId } from '../ids';
import { unprocessable, ApiError } from '../http/errors';
import { checkEmail } from './email';
import { abortUpload, beginUpload, commitUpload, UploadHandle } from './upload-state';
import { WriterTurns } from './writer-turns';

/** Longest a batch should hold the writer; on a slow or busy machine batches shrink below uploadBatchRows to stay near it. */
const BATCH_TARGET_MS = 200;
const MIN_BATCH_ROWS = 100;
/** Rows per INSERT statement: 6 parameters each stays far below SQLite's 32,766 variables. */
const ROWS_PER_STATEMENT = 1000;
const MAX_LISTED_INVALID = 100;
const MAX_REASON = 100;
const SNIFF_BYTES = 8192;

export interface InvalidRow {
  line: number;
  value: string;
  error: string;
}

export interface UploadResult {
  received: number;
  added: number;
  already_present: number;
  duplicates: number;
  invalid_count: number;
  invalid: InvalidRow[];
}

interface Entry {
  email: string;
  reason: string;
}

interface Columns {
  email: number;
  reason: number;
}

const EMAIL_HEADER = /^(e-?mail|email[ _-]?address|address)$/i;

/** Throws 422 when the file is empty or binary; called before anything is parsed. */
async function sniff(filePath: string): Promise<void> {
  const handle = await fs.promises.open(filePath, 'r');
  try {
    const buf = Buffer.alloc(SNIFF_BYTES);
    const { bytesRead } = await handle.read(buf, 0, SNIFF_BYTES, 0);
    const head = buf.subarray(0, bytesRead);
    if (!head.toString('utf8').replace(/^\uFEFF/, '').trim()) throw unprocessable('empty_file', 'the file is empty', 'file');
    if (head.includes(0)) throw unprocessable('invalid_csv', 'the file is not CSV text (it contains binary data)', 'file');
  } finally {
    await handle.close();
  }
}

function headerColumns(cells: string[]): Columns | undefined {
  if (cells.some((c) => c.includes('@'))) return undefined;
  const email = cells.findIndex((c) => EMAIL_HEADER.test(c.trim()));
  return { email: Math.max(email, 0), reason: cells.findIndex((c) => /^reason$/i.test(c.trim())) };
}

class Importer {
  readonly result: UploadResult = { received: 0, added: 0, already_present: 0, duplicates: 0, invalid_count: 0, invalid: [] };
  private batch: Entry[] = [];
  private batchRows: number;

  constructor(
    private readonly db: Db,
    private readonly turns: WriterTurns,
    private readonly upload: UploadHandle,
    private readonly options: { reason: string; now: number; batchRows: number },
  ) {
    this.batchRows = options.batchRows;
  }

  invalid(line: number, value: string, error: string): void {
    this.result.invalid_count++;
    if (this.result.invalid.length < MAX_LISTED_INVALID) this.result.invalid.push({ line, value: value.slice(0, 320), error });
  }

  async row(cells: string[], columns: Columns, line: number): Promise<void> {
    this.result.received++;
    const value = cells[columns.email] ?? '';
    const checked = checkEmail(value);
    if (!checked.ok) return this.invalid(line, value, checked.error);
    const reason = (columns.reason >= 0 ? cells[columns.reason]?.trim() : '') || this.options.reason;
    if (reason.length > MAX_REASON || /[\x00-\x1f\x7f]/.test(reason)) {
      return this.invalid(line, value, `reason must be at most ${MAX_REASON} printable characters`);
    }
    this.batch.push({ email: checked.email, reason });
    if (this.batch.length >= this.batchRows) await this.flush();
  }

  /**
   * Writes the batch in one short transaction, skipping addresses already
   * listed; only the skipped ones (usually few) are read back to tell "already
   * on the list" from "an earlier row of this file". Other users of the
   * database go first (WriterTurns).
   */
  async flush(): Promise<void> {
    const unique = new Map<string, Entry>();
    for (const e of this.batch) if (!unique.has(e.email)) unique.set(e.email, e);
    this.result.duplicates += this.batch.length - unique.size;
    this.batch = [];
    if (!unique.size) return;
    const rows = unique.size;
    const ms = await this.turns.run(() => this.db.transaction(async (trx) => {
      const entries = [...unique.values()];
      for (let i = 0; i < entries.length; i += ROWS_PER_STATEMENT) {
        for (const { email } of await this.insert(trx, entries.slice(i, i + ROWS_PER_STATEMENT))) unique.delete(email);
      }
      this.result.added += entries.length - unique.size;
      const skipped = [...unique.keys()];
      for (let i = 0; i < skipped.length; i += ROWS_PER_STATEMENT) await this.classifySkipped(trx, skipped.slice(i, i + ROWS_PER_STATEMENT));
    }));
    // Scale the next batch to the time this one took, up to the configured size.
    const fitting = Math.floor((rows * BATCH_TARGET_MS) / Math.max(ms, 1));
    this.batchRows = Math.max(MIN_BATCH_ROWS, Math.min(this.options.batchRows, fitting));
  }

  /** An address skipped as already in the table is a duplicate when this upload wrote it, else it was listed before. */
  private async classifySkipped(trx: Db, emails: string[]): Promise<void> {
    const existing: Array<{ upload_id: string | null }> = await trx('suppressions')
      .where({ account_id: this.upload.accountId })
      .whereIn('email', emails)
      .select('upload_id');
    for (const row of existing) {
      if (row.upload_id === this.upload.id) this.result.duplicates++;
      else this.result.already_present++;
    }
  }

  /** Returns the addresses inserted (not already in the table). */
  private async insert(trx: Db, entries: Entry[]): Promise<Array<{ email: string }>> {
    const { accountId, id: uploadId } = this.upload;
    const { now } = this.options;
    // Written by hand: the query builder turns a multi-row insert into a UNION
    // of SELECTs on SQLite, which stops at 500 rows.
    return rawRows<{ email: string }>(await trx.raw(
      `INSERT INTO suppressions (id, account_id, email, reason, source_message_id, created_at, upload_id) VALUES ${entries.map(() => '(?, ?, ?, ?, NULL, ?, ?)').join(', ')} ` +
        'ON CONFLICT (account_id, email) DO NOTHING RETURNING email',
      entries.flatMap((e) => [newId('sup'), accountId, e.email, e.reason, now, uploadId]),
    ));
  }
}

function csvError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof CsvError) {
    const line = (err as CsvError & { lines?: number }).lines;
    return unprocessable('invalid_csv', `the file is not valid CSV${line ? ` (line ${line})` : ''}: ${err.message.replace(/^Invalid [^:]*: /, '')}`, 'file');
  }
  throw err;
}

export interface UploadInput {
  accountId: string;
  filePath: string;
  reason: string;
  now: number;
  batchRows: number;
  /** Aborted when the client hangs up or the server stops; the upload is then undone. */
  signal?: AbortSignal;
  /** This node's name (node.id), written on the upload's lock row (upload-state.ts uploadOwner). */
  node?: string;
}

/** Adds every valid address of the CSV at `filePath`; all or nothing. */
export async function importSuppressionCsv(db: Db, input: UploadInput): Promise<UploadResult> {
  await sniff(input.filePath);
  const upload = await beginUpload(db, input.accountId, input.now, input.node);
  try {
    const result = await writeRows(db, upload, input);
    input.signal?.throwIfAborted();
    await commitUpload(db, upload);
    return result;
  } catch (err) {
    // If this fails too (the database closed under a shutdown), the start-up sweep finishes the job.
    await abortUpload(db, upload, input.batchRows).catch(() => undefined);
    throw csvError(err);
  }
}

/** Streams the file into tagged rows and checks that it held something. */
async function writeRows(db: Db, upload: UploadHandle, input: UploadInput): Promise<UploadResult> {
  const source = fs.createReadStream(input.filePath);
  const parser = parse({ bom: true, relax_column_count: true, skip_empty_lines: true, trim: true, info: true, max_record_size: 65_536 });
  source.on('error', (err) => parser.destroy(err));
  source.pipe(parser);
  const turns = new WriterTurns(db);
  try {
    const importer = new Importer(db, turns, upload, input);
    let columns: Columns | undefined;
    for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
      input.signal?.throwIfAborted();
      if (!columns) {
        const header = headerColumns(record);
        columns = header ?? { email: 0, reason: -1 };
        if (header) continue;
      }
      await importer.row(record, columns, info.lines);
    }
    await importer.flush();
    const { result } = importer;
    if (result.received === 0) throw unprocessable('empty_file', 'the file has no rows after the header', 'file');
    if (result.added + result.already_present + result.duplicates === 0) {
      const details = result.invalid.slice(0, 20).map((r) => ({ param: `file:line ${r.line}`, message: r.error }));
      throw unprocessable('no_valid_addresses', `none of the ${result.received} rows holds a valid address`, 'file', details);
    }
    return result;
  } finally {
    turns.close();
    source.destroy();
    parser.destroy();
  }
}
