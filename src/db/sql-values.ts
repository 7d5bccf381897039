/**
 * Rows written into a statement's text so they can ride with the COMMIT
 * (commit-batch.ts) instead of going to SQLite's thread as a bound statement
 * of their own: a multi-row `VALUES` insert, blobs as hex literals (`X'…'`).
 * SQLite reads such a list with less CPU than the JSON form of json-rows.ts,
 * whose `j.value->>i` walks the row's array again for each column: `npm run
 * bench row-forms` (20 message rows of 29 columns a transaction, 2026-11-24
 * 23:25) took 54.9–67.2 µs of the process's CPU a row as VALUES text against
 * 85.6–98.9 as JSON, 8.7–10.3 µs of it on the main thread against 11.8–14.3.
 *
 * Hex doubles the bytes, and the driver's `exec` copies its whole text on the
 * main thread before it goes to SQLite's thread. Measured with the driver
 * alone, that took 0.14 ms for a transaction with 15 KB of blobs, 0.23 ms for
 * 30 KB, but 1.06 ms for 60 KB and 1.67 ms for 120 KB on a busy guest (0.14 and
 * 0.35 ms for 64 and 128 KB on a quiet one); a group of twenty 5 KB accepts
 * costs the main thread more that way than the trip it saves. SQLite's own
 * reading of the hex is slower than binding too: on an idle event loop one
 * exec with 64 KB of blobs took 0.68 ms against 0.29 ms for BEGIN, the bound
 * insert and COMMIT as three trips. A trip
 * is worth ~1 ms of a request's latency when the writer's groups are small
 * (a moderate load: an accept or two and an outcome a group), and there the
 * blobs are a few KB. So a transaction's ridden blobs share a budget of 32 KB
 * (BlobBudget); rows beyond it are bound as before.
 *
 * A value is written only when its text stores what binding it stores:
 * well-formed strings without NUL (a literal cannot hold one), booleans as 1
 * and 0, null, safe integers, Buffers. Anything else (a double, undefined,
 * another object) leaves the rows to the bound statement. One difference is
 * kept, as in json-rows.ts: the driver binds an integer beyond 32 bits as a
 * float, which a TEXT or untyped column would store as '2147483648.0'; the
 * literal stores the integer. The tables written this way (those of the
 * writer's buffer, as in json-rows.ts) keep their numbers in INTEGER, NUMERIC
 * or REAL columns, where the two are the same value
 * (test/db/buffer-insert.test.ts compares every affinity).
 */
import { sqlString } from './commit-batch';
import { isWellFormed } from './json-rows';

/** Blob bytes one transaction's ridden statements may carry (as twice as many hex characters). */
export const RIDDEN_BLOB_BYTES = 32 * 1024;

/** What is left of a transaction's blob bytes to ride (see RIDDEN_BLOB_BYTES). */
export interface BlobBudget {
  bytes: number;
}

export const newBlobBudget = (): BlobBudget => ({ bytes: RIDDEN_BLOB_BYTES });

/**
 * `INSERT INTO "table" (…) VALUES (…), …` with every value in the text, or undefined when one must be bound or
 * the blobs do not fit in `budget` (which is then left as it was).
 */
export function valuesInsert(table: string, columns: readonly string[], rows: ReadonlyArray<Record<string, unknown>>, budget: BlobBudget): string | undefined {
  let bytes = 0;
  for (const row of rows) for (const c of columns) if (Buffer.isBuffer(row[c])) bytes += (row[c] as Buffer).length;
  if (bytes > budget.bytes) return undefined;
  const tuples: string[] = [];
  for (const row of rows) {
    const values: string[] = [];
    for (const c of columns) {
      const literal = sqlLiteral(row[c]);
      if (literal === undefined) return undefined;
      values.push(literal);
    }
    tuples.push(`(${values.join(', ')})`);
  }
  budget.bytes -= bytes;
  return `INSERT INTO "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) VALUES ${tuples.join(', ')}`;
}

/** `value` as SQL text that stores what binding it stores, or undefined (see the module comment). */
function sqlLiteral(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return value.includes('\u0000') || !isWellFormed(value) ? undefined : sqlString(value);
    case 'boolean':
      return value ? '1' : '0';
    case 'number':
      return Number.isSafeInteger(value) ? String(value) : undefined;
    case 'object':
      if (value === null) return 'NULL';
      return Buffer.isBuffer(value) ? `X'${value.toString('hex')}'` : undefined;
    default:
      return undefined;
  }
}
