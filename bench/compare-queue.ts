/**
 * A deep queue with the MTA paused: for each depth, the appliance accepts one
 * real message through the API, then (appliance stopped) that row is cloned
 * straight into the database file until `depth` messages are queued and due
 * (seeding a million through the API would take the whole time budget; the
 * clones share the one content row, as copies of one send do). Then: the cost
 * of one claim of 50 (src/delivery/queue.ts claim, in a transaction rolled
 * back, median of 9), and the appliance's RSS after start and after wrk drove
 * sends at it for a few seconds.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knex, { type Knex } from 'knex';
import { ApiClient } from '../test/support/app';
import { claim } from '../src/delivery/queue';
import { FROM, startPigeon } from './compare-pigeon';
import { freePort, wrk, writeSendScript } from './compare-tools';
import { median } from './compare-throughput';
import type { CompareOptions, Row } from './compare';

const openFile = (dataDir: string): Knex => knex({ client: 'sqlite3', connection: { filename: path.join(dataDir, 'pigeon.sqlite') }, useNullAsDefault: true, pool: { min: 1, max: 1 } });

/**
 * Clones the one queued message until `depth` rows are queued and due, 100,000 rows a statement (INSERT … SELECT
 * over a counter; bench-only SQLite SQL, the product's statements stay portable). Clones differ in id, batch,
 * recipient and Message-ID.
 */
async function seed(db: Knex, depth: number): Promise<void> {
  const template = await db('messages').first('id');
  const columns = ((await db.raw('PRAGMA table_info(messages)')) as Array<{ name: string }>).map((c) => c.name);
  const now = Date.now();
  const changed: Record<string, string> = {
    id: "'msg_seed' || printf('%018d', n)",
    batch_id: "'bat_seed' || printf('%018d', n)",
    to_email: "'rcpt' || n || '@sink.test'",
    message_id_header: "n || '.seed@shop.bench'",
    next_attempt_at: String(now - 1000),
  };
  const select = columns.map((c) => changed[c] ?? `t."${c}"`).join(', ');
  for (let from = 1; from < depth; from += 100_000) {
    const to = Math.min(depth - 1, from + 99_999);
    await db.raw(
      `WITH RECURSIVE seq(n) AS (SELECT ? UNION ALL SELECT n + 1 FROM seq WHERE n < ?) ` +
        `INSERT INTO messages (${columns.map((c) => `"${c}"`).join(', ')}) SELECT ${select} FROM seq, messages t WHERE t.id = ?`,
      [from, to, template.id],
    );
  }
}

async function claimCostMs(db: Knex): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 9; i++) {
    await db
      .transaction(async (trx) => {
        const t0 = performance.now();
        const jobs = await claim(trx, { owner: 'bench', now: Date.now(), leaseMs: 60_000, limit: 50 });
        times.push(performance.now() - t0);
        if (jobs.length !== 50) throw new Error(`claimed ${jobs.length}, expected 50`);
        throw new Error('rollback');
      })
      .catch((err: Error) => {
        if (err.message !== 'rollback') throw err;
      });
  }
  return median(times);
}

async function oneDepth(depth: number, o: CompareOptions): Promise<string> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-bench-queue-'));
  const sinkPort = await freePort(); // nothing listens: the MTA is paused anyway
  try {
    const first = await startPigeon({ sinkPort, paused: true, dataDir });
    const sent = await new ApiClient(first.server.url, first.sendKey).post('/v1/messages/send', { from: FROM, to: ['rcpt0@sink.test'], subject: 'queued', text: 'x'.repeat(o.size) });
    await first.close();
    if (sent.status !== 202) throw new Error(`send: ${sent.status} ${sent.text}`);
    const db = openFile(dataDir);
    const t0 = performance.now();
    await seed(db, depth);
    const seeded = (performance.now() - t0) / 1000;
    const claimMs = await claimCostMs(db);
    await db.destroy();
    const pigeon = await startPigeon({ sinkPort, paused: true, dataDir, sendKey: first.sendKey });
    const startRss = (await pigeon.server.stats()).maxRssKb;
    const script = writeSendScript(dataDir, FROM, o.size);
    const w = await wrk(pigeon.server.url, script, o.connections, Math.min(o.seconds, 5), { KEY: pigeon.sendKey });
    const peakRss = (await pigeon.server.stats()).maxRssKb;
    await pigeon.close();
    const line = `${depth} queued: claim of 50 ${claimMs.toFixed(2)} ms; RSS ${Math.round(startRss / 1024)} MB after start, peak ${Math.round(peakRss / 1024)} MB after ${w.requests - w.non2xx} more sends (${Math.round((w.requests - w.non2xx) / w.seconds)} req/s)`;
    console.log(`  ${line} (seeded in ${seeded.toFixed(1)} s)`);
    return line;
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function queued(o: CompareOptions): Promise<Row> {
  const lines: string[] = [];
  for (const depth of o.queued) lines.push(await oneDepth(depth, o));
  return {
    target: 'deep queue, MTA paused (RSS < 300 MB, claim cost flat)',
    postfix: 'n/a',
    pigeon: lines.join('<br>'),
    command: `npm run bench compare -- --only=queue --queued=${o.queued.join(',')}`,
  };
}
