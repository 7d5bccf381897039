/**
 * Rows written late, many at once. Inside a transaction of the writer
 * (writer.ts) an insert of event, attempt or webhook-delivery rows, or an
 * addition to a counter row, is not run when asked: it is kept, and just
 * before the commit every table's rows go out as a few multi-row statements,
 * counters summed per row first. A burst of a hundred messages then costs a
 * handful of statements instead of hundreds, each of which cost a thread
 * hand-off to SQLite (~0.4 ms) on the only writer connection.
 *
 * Outside a writer transaction (the CLI, a route with its own transaction)
 * the same calls write at once, so callers need not know where they run.
 * Rows kept here are not visible to reads in the same transaction: only
 * tables nobody reads back before the commit go through here.
 */
import type { Knex } from 'knex';
import { isPostgres, type Queryable, type Tx } from './index';
import { rideWithCommit, sqlString } from './commit-batch';
import { jsonColumns, jsonTuples } from './json-rows';
import { valuesInsert, type BlobBudget } from './sql-values';
import { planRiding, type BufferedWrite } from './ride-plan';
import { wavesOf, type WriteOrder } from './write-order';
import { chunksOf, MAX_VARIABLES } from './row-chunks';

interface CounterTable {
  key: string[];
  /** key values joined → row with summed metrics */
  rows: Map<string, Record<string, unknown>>;
  metrics: Set<string>;
}

export class WriteBuffer {
  /** table → rows, in the order tables were first written (parents before children) */
  private readonly inserts = new Map<string, object[]>();
  private readonly counters = new Map<string, CounterTable>();

  /** `order`: the schema's foreign keys, when statements may go out together (SQLite; write-order.ts) */
  constructor(private readonly order?: WriteOrder) {}

  insert(table: string, rows: readonly object[]): void {
    let list = this.inserts.get(table);
    if (!list) this.inserts.set(table, (list = []));
    list.push(...rows);
  }

  add(table: string, key: string[], rows: readonly Record<string, unknown>[], metrics: readonly string[]): void {
    let t = this.counters.get(table);
    if (!t) this.counters.set(table, (t = { key, rows: new Map(), metrics: new Set() }));
    for (const m of metrics) t.metrics.add(m);
    for (const row of rows) {
      const id = keyOf(key, row);
      const sum = t.rows.get(id);
      if (!sum) {
        t.rows.set(id, Object.assign({}, row));
        continue;
      }
      for (const m of metrics) sum[m] = Number(sum[m] ?? 0) + Number(row[m] ?? 0);
    }
  }

  /**
   * Writes the kept inserts (in first-written order), then the counters unless `counters` is false: then they
   * stay here for the writer to sum across transactions (addCountersOf; see Writer's counterFlushMs). On
   * SQLite, with the schema's order known, statements go out together in waves (write-order.ts).
   */
  async flush(trx: Tx, counters = true): Promise<void> {
    const writes: BufferedWrite[] = [];
    const together = this.order !== undefined;
    for (const [table, rows] of this.inserts) {
      writes.push({ table, rows, run: () => insertChunked(trx, table, rows, together), literal: (budget) => insertLiterals(table, rows, budget) });
    }
    if (counters) writes.push(...this.counterWrites(trx));
    const waves = wavesOf(writes, this.order);
    const plan = isPostgres(trx) ? { bound: waves, ridden: [], statements: [] } : planRiding(waves);
    for (const wave of plan.bound) await settleAll(wave.map((w) => w.run()));
    // after the bound writes: whatever runs on the connection sends ridden statements first
    if (plan.statements.length && !(await rideWithCommit(trx, plan.statements))) {
      for (const wave of plan.ridden) await settleAll(wave.map((w) => w.run()));
    }
    this.inserts.clear();
    if (counters) this.counters.clear();
  }

  /**
   * Writes the counters and keeps them: work the writer may run again (its group rolled back by a neighbour
   * and split) must write the same rows each time, not nothing the second time.
   */
  async writeCounters(trx: Tx): Promise<void> {
    for (const write of this.counterWrites(trx)) await write.run();
  }

  /**
   * Counter rows in key order: two nodes' writers adding to the same rows lock them in the same order, so they
   * wait for each other instead of deadlocking (PostgreSQL; SQLite has one writer).
   */
  private counterWrites(trx: Tx): BufferedWrite[] {
    return [...this.counters].map(([table, t]) => {
      const rows = [...t.rows.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row);
      const metrics = [...t.metrics];
      return { table, rows, run: () => upsertAdd(trx, table, t.key, rows, metrics), literal: () => upsertLiterals(table, t.key, rows, metrics) };
    });
  }

  /** Adds every counter row kept in `other` to this one's (and empties `other`). */
  addCountersOf(other: WriteBuffer): void {
    for (const [table, t] of other.counters) this.add(table, t.key, [...t.rows.values()], [...t.metrics]);
    other.counters.clear();
  }

  get hasCounters(): boolean {
    return this.counters.size > 0;
  }
}

/** The key columns' values joined (a loop: mapping to an array and joining cost several times more per row). */
function keyOf(key: readonly string[], row: Record<string, unknown>): string {
  let id = '';
  for (const k of key) id += `${String(row[k])}\u0000`;
  return id;
}

const buffers = new WeakMap<object, WriteBuffer>();

/** Makes `trx` keep rows until `flush` (the writer does this for its transactions). */
export function attachBuffer(trx: Tx, order?: WriteOrder): WriteBuffer {
  const buffer = new WriteBuffer(order);
  buffers.set(trx, buffer);
  return buffer;
}

/** Inserts rows: kept for the commit inside a writer transaction, at once elsewhere. */
export async function insertRows(db: Queryable, table: string, rows: readonly object[]): Promise<void> {
  if (!rows.length) return;
  const buffer = buffers.get(db);
  if (buffer) return buffer.insert(table, rows);
  await insertChunked(db, table, rows);
}

/**
 * Adds `metrics` of each row to the row with the same `key` columns (creating
 * it): kept and summed inside a writer transaction, at once elsewhere.
 */
export async function addToCounters(db: Queryable, table: string, key: string[], rows: readonly Record<string, unknown>[], metrics: readonly string[]): Promise<void> {
  if (!rows.length || !metrics.length) return;
  const buffer = buffers.get(db);
  if (buffer) return buffer.add(table, key, rows, metrics);
  await upsertAdd(db, table, key, rows, metrics);
}

/**
 * Rows with the same columns go in one statement (chunked); other column sets in their own. `together`: those
 * statements are sent at once instead of one after another (one table has no order among its own rows).
 */
async function insertChunked(db: Queryable, table: string, rows: readonly object[], together = false): Promise<void> {
  const sent: Array<Promise<unknown>> = [];
  const sqlite = !isPostgres(db);
  for (const [columns, chunk] of chunksOf(rows)) {
    const statement = (sqlite && jsonInsert(db, table, columns, chunk)) || boundInsert(db, table, columns, chunk);
    if (together) sent.push(Promise.resolve(statement));
    else await statement;
  }
  await settleAll(sent);
}

/** SQLite: the chunk as one JSON value (json-rows.ts), when every value is one JSON carries exactly. */
function jsonInsert(db: Queryable, table: string, columns: string[], chunk: Array<Record<string, unknown>>): Knex.Raw | undefined {
  const json = jsonTuples(chunk.map((row) => columns.map((c) => row[c])));
  return json === undefined ? undefined : db.raw(jsonInsertSql(table, columns), [json]);
}

/**
 * insertChunked's statements with their values in the text (commit-batch.ts): a VALUES list (sql-values.ts; blobs
 * within the budget), else one JSON literal (a string with a NUL); undefined when a chunk must be bound. The
 * VALUES list first: ~30 µs less CPU a message row than the JSON literal, ~3 µs of it on the main thread
 * (sql-values.ts, `npm run bench row-forms`).
 */
function insertLiterals(table: string, rows: readonly object[], budget: BlobBudget): string[] | undefined {
  const statements: string[] = [];
  const before = budget.bytes;
  for (const [columns, chunk] of chunksOf(rows)) {
    const statement = valuesInsert(table, columns, chunk, budget) ?? jsonLiteralInsert(table, columns, chunk);
    if (statement === undefined) {
      budget.bytes = before; // the write is bound whole: its earlier chunks' bytes are left to the others
      return undefined;
    }
    statements.push(statement);
  }
  return statements;
}

/** The chunk as one JSON literal in an insert's text, or undefined when JSON would not carry a value exactly. */
export function jsonLiteralInsert(table: string, columns: string[], chunk: Array<Record<string, unknown>>): string | undefined {
  const json = jsonTuples(chunk.map((row) => columns.map((c) => row[c])));
  return json === undefined ? undefined : withJsonLiteral(jsonInsertSql(table, columns), json);
}

/** `sql` with its one `json_each(?)` reading `json` from the text instead. */
function withJsonLiteral(sql: string, json: string): string {
  const at = sql.indexOf(JSON_PARAMETER);
  if (at < 0 || sql.indexOf(JSON_PARAMETER, at + 1) >= 0) throw new Error(`expected one ${JSON_PARAMETER} in ${sql}`);
  return `${sql.slice(0, at)}json_each(${sqlString(json)})${sql.slice(at + JSON_PARAMETER.length)}`;
}

const JSON_PARAMETER = 'json_each(?)';

function boundInsert(db: Queryable, table: string, columns: string[], chunk: Array<Record<string, unknown>>): Knex.Raw | Knex.QueryBuilder {
  const bindings = chunk.flatMap((row) => columns.map((c) => row[c]));
  // undefined means "the column's default" to the query builder, which a bound value cannot say
  return bindings.includes(undefined) ? db(table).insert(chunk) : db.raw(insertSql(table, columns, chunk.length), bindings as Knex.RawBinding[]);
}

/**
 * Waits for every one of `sent` to finish, then fails with the first failure: none may still be running when
 * the writer rolls the transaction back.
 */
async function settleAll(sent: ReadonlyArray<Promise<unknown>>): Promise<void> {
  const failed = (await Promise.allSettled(sent)).find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}

/**
 * Statement text per (table, columns, row count): building it with the query builder cost more than running
 * it (per row and column, on every transaction). Our own table shapes and chunk sizes: a few dozen entries.
 */
const statements = new Map<string, string>();

function cachedSql(id: string, build: () => string): string {
  let sql = statements.get(id);
  if (!sql) {
    sql = build();
    if (statements.size > 1000) statements.clear();
    statements.set(id, sql);
  }
  return sql;
}

const tuples = (columns: number, rows: number) => Array(rows).fill(`(${Array(columns).fill('?').join(', ')})`).join(', ');

/** A multi-row VALUES insert (not the query builder's UNION of SELECTs on SQLite); names quoted for both databases. */
function insertSql(table: string, columns: string[], rows: number): string {
  return cachedSql(`insert|${table}|${columns.join(',')}|${rows}`, () =>
    `INSERT INTO "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) VALUES ${tuples(columns.length, rows)}`);
}

/**
 * SQLite: the rows from json_each(?). Rows without an id of their own are numbered by the table in insert order
 * (message_attempts): SQL promises that order only with ORDER BY, which costs a sort, so rows with ids skip it.
 */
function jsonInsertSql(table: string, columns: string[]): string {
  return cachedSql(`json-insert|${table}|${columns.join(',')}`, () =>
    `INSERT INTO "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) SELECT ${jsonColumns(columns)} FROM json_each(?) AS j` +
      (columns.includes('id') ? '' : ' ORDER BY j.key'));
}

function upsertSql(table: string, key: string[], metrics: string[], rows: number): string {
  return cachedSql(`upsert|${table}|${key.join(',')}|${metrics.join(',')}|${rows}`, () =>
    `INSERT INTO ${table} (${[...key, ...metrics].join(', ')}) VALUES ${tuples(key.length + metrics.length, rows)} ` +
      `ON CONFLICT (${key.join(', ')}) DO UPDATE SET ${metrics.map((m) => `${m} = ${table}.${m} + excluded.${m}`).join(', ')}`);
}

async function upsertAdd(db: Queryable, table: string, key: string[], rows: readonly Record<string, unknown>[], metrics: readonly string[]): Promise<void> {
  const columns = [...key, ...metrics];
  const perStatement = Math.max(1, Math.floor(MAX_VARIABLES / columns.length));
  const sqlite = !isPostgres(db);
  for (let i = 0; i < rows.length; i += perStatement) {
    const tuples = rows.slice(i, i + perStatement).map((r) => columns.map((c) => (r[c] ?? 0) as string | number));
    const json = sqlite ? jsonTuples(tuples) : undefined; // one value to bind, not one per column (json-rows.ts)
    if (json !== undefined) await db.raw(jsonUpsertSql(table, key, [...metrics]), [json]);
    else await db.raw(upsertSql(table, key, [...metrics], tuples.length), tuples.flat());
  }
}

/** upsertAdd's statements with their JSON value as a literal (commit-batch.ts); undefined when one is bound. */
function upsertLiterals(table: string, key: string[], rows: readonly Record<string, unknown>[], metrics: string[]): string[] | undefined {
  const columns = [...key, ...metrics];
  const json = jsonTuples(rows.map((r) => columns.map((c) => (r[c] ?? 0) as string | number)));
  return json === undefined ? undefined : [withJsonLiteral(jsonUpsertSql(table, key, metrics), json)];
}

/** SQLite: the rows from json_each(?); a WHERE tells SQLite's parser that ON CONFLICT begins the upsert. */
function jsonUpsertSql(table: string, key: string[], metrics: string[]): string {
  return cachedSql(`json-upsert|${table}|${key.join(',')}|${metrics.join(',')}`, () =>
    `INSERT INTO ${table} (${[...key, ...metrics].join(', ')}) SELECT ${jsonColumns([...key, ...metrics])} FROM json_each(?) AS j WHERE 1 ` +
      `ON CONFLICT (${key.join(', ')}) DO UPDATE SET ${metrics.map((m) => `${m} = ${table}.${m} + excluded.${m}`).join(', ')}`);
}
