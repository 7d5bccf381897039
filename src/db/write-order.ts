/**
 * Which kept writes of a transaction may run at the same time (SQLite).
 *
 * The write buffer (buffer.ts) sends its rows just before the commit. On
 * SQLite each statement is a trip to the driver's thread pool and back
 * through the event loop, about a millisecond under load, and the writer's
 * transactions are in series: sent one after another, six tables cost six
 * trips. Sent together, they cost about one (SQLite runs them one at a time
 * on the connection anyway). The only order that matters is a foreign key:
 * a message's content row before the message, the message before its
 * attempt. So the writes go in waves: a write waits only for the earlier
 * writes its rows refer to (an attempt written with other sends' new
 * messages, but of a message accepted earlier, does not wait for them).
 *
 * The parents come from the schema (`PRAGMA foreign_key_list`), read once at
 * start; a table not in it waits for everything written before it, as if
 * there were no waves. PostgreSQL runs one statement at a time on a
 * connection, so its writes stay in order without waves.
 */
import type { Db } from './index';

/** One foreign key of a table: its columns `from` refer to the `parent` table's columns `to`. */
export interface ForeignKey {
  parent: string;
  from: string[];
  /** null: the parent's primary key, not named (knex always names it) */
  to: Array<string | null>;
}

/** Table → its foreign keys. */
export type WriteOrder = ReadonlyMap<string, readonly ForeignKey[]>;

/** A write of the buffer: its table and the rows it writes. */
export interface TableWrite {
  table: string;
  rows: readonly object[];
}

/** Every table's foreign keys, in one read of the schema (SQLite's `pragma_foreign_key_list` as a table). */
/** Every table's foreign keys, in one read of the schema (SQLite's `pragma_foreign_key_list` as a table). */
export async function loadWriteOrder(db: Db): Promise<WriteOrder> {
  const rows: Array<{ name: string; id: number | null; parent: string; from: string; to: string | null }> = await db.raw(
    'SELECT m.name, k.id, k."table" AS parent, k."from", k."to" FROM sqlite_master m LEFT JOIN pragma_foreign_key_list(m.name) k ' +
      "WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' ORDER BY m.name, k.id, k.seq",
  );
  const order = new Map<string, ForeignKey[]>();
  const keys = new Map<string, ForeignKey>();
  for (const r of rows) {
    if (!order.has(r.name)) order.set(r.name, []);
    if (r.id === null || r.parent === r.name) continue; // no key, or one to the table itself
    let key = keys.get(`${r.name}\u0000${r.id}`);
    if (!key) {
      keys.set(`${r.name}\u0000${r.id}`, (key = { parent: r.parent, from: [], to: [] }));
      order.get(r.name)!.push(key);
    }
    key.from.push(r.from);
    key.to.push(r.to);
  }
  return order;
}

/**
 * `writes` (in the order they were asked for) cut into waves to run one after another, each wave's writes at
 * once. A write waits for an earlier write to a table it refers to only when one of its rows refers to one of
 * that write's rows (an attempt of a message accepted in an earlier transaction need not wait for this one's
 * new messages); with no order known for its table, it waits for every earlier write.
 */
export function wavesOf<W extends TableWrite>(writes: readonly W[], order: WriteOrder | undefined): W[][] {
  const waves: W[][] = [];
  const placed: Array<{ write: W; wave: number }> = [];
  let last = -1;
  for (const write of writes) {
    const keys = order?.get(write.table);
    let wave = 0;
    if (!keys) wave = last + 1;
    for (const earlier of placed) {
      if (earlier.write.table === write.table) wave = Math.max(wave, earlier.wave); // a table's statements in order
      else if (keys?.some((k) => k.parent === earlier.write.table && refersTo(write.rows, k, earlier.write.rows))) wave = Math.max(wave, earlier.wave + 1);
    }
    (waves[wave] ??= []).push(write);
    placed.push({ write, wave });
    last = Math.max(last, wave);
  }
  return waves;
}

/** Whether any of `rows` refers through `key` to one of `parents` (a row with a null in the key refers to none). */
function refersTo(rows: readonly object[], key: ForeignKey, parents: readonly object[]): boolean {
  if (key.to.includes(null)) return true;
  const to = key.to as string[];
  const wanted = new Set(parents.map((p) => keyOf(p as Record<string, unknown>, to)));
  return rows.some((r) => {
    const id = keyOf(r as Record<string, unknown>, key.from);
    return id !== undefined && wanted.has(id);
  });
}

function keyOf(row: Record<string, unknown>, columns: readonly string[]): string | undefined {
  let id = '';
  for (const c of columns) {
    const v = row[c];
    if (v === null || v === undefined) return undefined;
    id += `${String(v)}\u0000`;
  }
  return id;
}
