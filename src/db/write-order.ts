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
 * attempt. So the tables go in waves: each wave holds every table none of
 * whose parents is still to be written in this transaction.
 *
 * The parents come from the schema (`PRAGMA foreign_key_list`), read once at
 * start; a table not in it waits for everything written before it, as if
 * there were no waves. PostgreSQL runs one statement at a time on a
 * connection, so its writes stay in order without waves.
 */
import type { Db } from './index';

/** Table → the tables its foreign keys point at. */
export type WriteOrder = ReadonlyMap<string, readonly string[]>;

export async function loadWriteOrder(db: Db): Promise<WriteOrder> {
  const tables: Array<{ name: string }> = await db('sqlite_master').where({ type: 'table' }).whereNot('name', 'like', 'sqlite_%').select('name');
  const order = new Map<string, string[]>();
  for (const { name } of tables) {
    const keys: Array<{ table: string }> = await db.raw(`PRAGMA foreign_key_list("${name.replace(/"/g, '""')}")`);
    order.set(name, [...new Set(keys.map((k) => k.table).filter((t) => t !== name))]);
  }
  return order;
}

/**
 * `writes` (in the order they were asked for) cut into waves to run one after another, each wave's writes at
 * once: a write waits for every earlier write to a table it refers to, and, with no order known for its table,
 * for every earlier write.
 */
export function wavesOf<W extends { table: string }>(writes: readonly W[], order: WriteOrder | undefined): W[][] {
  const waves: W[][] = [];
  const waveOf = new Map<string, number>(); // table → the last wave writing it
  let last = -1;
  for (const write of writes) {
    const parents = order?.get(write.table);
    let wave = 0;
    if (!parents) wave = last + 1;
    else for (const p of parents) wave = Math.max(wave, (waveOf.get(p) ?? -1) + 1);
    wave = Math.max(wave, waveOf.get(write.table) ?? 0); // a table's own statements keep their order among waves
    (waves[wave] ??= []).push(write);
    waveOf.set(write.table, Math.max(wave, waveOf.get(write.table) ?? 0));
    last = Math.max(last, wave);
  }
  return waves.filter(Boolean);
}
