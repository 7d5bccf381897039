/**
 * `npm run bench row-forms [--rows=20] [--transactions=400] [--rounds=3]`: what SQLite and the main thread pay
 * for the writer's message rows in each form it could send them in (src/db/buffer.ts), on the real schema
 * (migrated into a temporary data dir), WAL at synchronous=NORMAL, foreign keys off:
 * - `values`: a VALUES list in the statement's text, riding with the COMMIT (sql-values.ts: what the writer sends);
 * - `json`: one JSON literal in the text, unpacked by `json_each` and `j.value->>i` (buffer.ts' jsonLiteralInsert);
 * - `bound`: for reference, a multi-row insert prepared once, every value bound by the driver on the main thread,
 *   its COMMIT a trip of its own (the writer binds a chunk as one JSON value instead: json-rows.ts).
 * Prints, per row, the process's CPU (SQLite's thread included, and building the rows: the same in every form)
 * and the main thread's synchronous part of the call (building the text or binding). Alone on a quiet loop: no
 * HTTP, no MIME, no other writes. The forms take turns in a rotating order, each on an emptied, checkpointed table.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sqlite3 from 'sqlite3';
import { parseConfig } from '../src/config';
import { databaseFile, migrateLatest, openDatabase } from '../src/db';
import { jsonLiteralInsert } from '../src/db/buffer';
import { newBlobBudget, valuesInsert } from '../src/db/sql-values';
import { newId } from '../src/ids';
import { messageRows, type AcceptBatch } from '../src/messages/accept';

type Form = 'values' | 'json' | 'bound';

/** `count` message rows as accept writes them (messages/accept.ts messageRows): single-recipient sends, no lease. */
function messageRowsOf(count: number, first: number): Array<Record<string, unknown>> {
  const now = Date.now();
  const batch: AcceptBatch = {
    accountId: 'acc_bench', mode: 'live', batchId: newId('bat'), source: 'api', now, sendAt: null, sendingDomain: 'shop.bench',
    domainVerified: true, tags: [], metadata: {}, ipPool: null, trackOpens: false, trackClicks: false, listUnsubscribe: false, contents: [],
    messages: Array.from({ length: count }, (_, i) => {
      const id = newId('msg');
      return {
        id, contentId: newId('cnt'), rcptType: 'to' as const, fromEmail: 'orders@shop.bench', fromName: null, toEmail: `rcpt${first + i}@sink.test`,
        toName: null, recipientDomain: 'sink.test', cc: [], subject: `bench ${first + i}`, messageIdHeader: `${id}@mta.bench`,
      };
    }),
  };
  return messageRows(batch);
}

const call = (start: (cb: (err: Error | null) => void) => void) =>
  new Promise<void>((resolve, reject) => start((err) => (err ? reject(err) : resolve())));

async function measure(file: string, form: Form, rowsPer: number, transactions: number): Promise<{ cpu: number; main: number }> {
  const db = new sqlite3.Database(file);
  const exec = (sql: string) => call((cb) => db.exec(sql, cb));
  await exec('PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=OFF; DELETE FROM messages');
  await call((cb) => db.all('PRAGMA wal_checkpoint(TRUNCATE)', cb)); // the last form's WAL is not this one's work
  const columns = Object.keys(messageRowsOf(1, 0)[0]);
  const bound = db.prepare(`INSERT INTO messages (${columns.join(', ')}) VALUES ${Array(rowsPer).fill(`(${columns.map(() => '?').join(', ')})`).join(', ')}`);
  let cpu = process.cpuUsage();
  let main = 0n;
  let n = 0;
  for (let t = -50; t < transactions; t++) { // 50 transactions of warm-up, not counted
    if (t === 0) [cpu, main] = [process.cpuUsage(), 0n];
    const rows = messageRowsOf(rowsPer, n);
    n += rowsPer;
    await exec('BEGIN');
    const started = process.hrtime.bigint();
    const done = call((cb) => {
      if (form === 'bound') return void bound.run(rows.flatMap((r) => columns.map((c) => r[c])), cb);
      const sql = form === 'values' ? valuesInsert('messages', columns, rows, newBlobBudget()) : jsonLiteralInsert('messages', columns, rows);
      db.exec(`${sql}; COMMIT`, cb);
    });
    main += process.hrtime.bigint() - started;
    await done;
    if (form === 'bound') await exec('COMMIT');
  }
  const used = process.cpuUsage(cpu);
  await call((cb) => bound.finalize(() => db.close(cb)));
  const count = rowsPer * transactions;
  return { cpu: (used.user + used.system) / count, main: Number(main) / 1e3 / count };
}

export async function run(args: string[]): Promise<void> {
  const opt = (name: string, fallback: string) => Number(args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
  const [rowsPer, transactions, rounds] = [opt('rows', '20'), opt('transactions', '400'), opt('rounds', '3')];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-bench-rows-'));
  try {
    const config = parseConfig({ dataDir: dir });
    const knex = openDatabase(config);
    await migrateLatest(knex);
    await knex.destroy();
    const file = databaseFile(config);
    console.log(`message rows, ${rowsPer} a transaction, ${transactions} transactions a run; µs a row (process CPU / main thread's call)`);
    for (let round = 1; round <= rounds; round++) {
      const line: string[] = [];
      const forms: Form[] = ['values', 'json', 'bound'];
      for (const form of [...forms.slice((round - 1) % 3), ...forms.slice(0, (round - 1) % 3)]) {
        const r = await measure(file, form, rowsPer, transactions);
        line.push(`${form} ${r.cpu.toFixed(1)} / ${r.main.toFixed(2)}`);
      }
      console.log(`  round ${round}: ${line.join('; ')}`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
