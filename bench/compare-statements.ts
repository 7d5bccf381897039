/**
 * SQL statements per message, counted in process with knex's `query` event on
 * the app's database handle (app.db, the writer): the process's first message
 * (cold: its key, account and domain are read into the caches), one live
 * message sent alone through the API until the sink has it and the appliance
 * has gone quiet, then a burst of `burst` messages the same way, then the
 * same number of messages as sends of ten recipients each (the shape of
 * test/db/statements.test.ts). The first burst's figure moves with timing:
 * single sends reach the writer spread out, and on a fast machine they commit
 * a few to a group. Sends of ten commit their ten copies together whatever
 * the timing. Background
 * timers (webhook poll, domain re-checks) are far apart, so what is counted is
 * the message's path. As in test/db/statements.test.ts, the figure held to
 * the target counts BEGIN and COMMIT too.
 */
import { createKey, startTestApp, type TestApp } from '../test/support/app';
import { startDnsServer } from '../test/support/dns-server';
import { startSmtpSink, type SmtpSink } from '../test/support/smtp-sink';
import { deliveryConfig, pointMx, verifiedDomain } from '../test/delivery/world';
import { countDriverTrips } from '../test/support/driver-trips';
import { sleep } from './compare-tools';
import type { CompareOptions, Row } from './compare';

interface Count {
  /** every statement, BEGIN and COMMIT included */
  all: number;
  /** statements other than BEGIN, COMMIT and ROLLBACK */
  statements: number;
  selects: number;
  transactions: number;
  /**
   * Statements (BEGIN and COMMIT included) of the pools worker's timer, left out of the counts above: it writes
   * the IP statistics of every send since its last turn at once, and rereads warm-up and throttle state, however
   * many messages there were (test/db/statements.test.ts stops that worker instead).
   */
  timer: number;
  /** calls into the sqlite3 driver that each go to its thread and back (every connection: writer, readers, checkpoints) */
  trips: number;
}

/** A statement of the pools worker's timer: on the IP tables only it writes and reads. */
const POOLS_TIMER = /^(select \* from `ip_(warmups|throttles)`|insert into `ip_daily_usage`)/;

function counter(app: TestApp, trips: () => number): { take(): Count } {
  let seen: Array<{ tx?: string; sql: string }> = [];
  let tripsBefore = trips();
  app.db.on('query', (q: { sql: string; __knexTxId?: string }) => {
    seen.push({ tx: q.__knexTxId, sql: q.sql.trimStart().toLowerCase() });
  });
  return {
    take() {
      const timerTx = new Set(seen.filter((q) => q.tx && POOLS_TIMER.test(q.sql)).map((q) => q.tx));
      const c: Count = { all: 0, statements: 0, selects: 0, transactions: 0, timer: 0, trips: trips() - tripsBefore };
      tripsBefore = trips();
      for (const { tx, sql } of seen) {
        if ((tx && timerTx.has(tx)) || POOLS_TIMER.test(sql)) {
          c.timer++;
          continue;
        }
        c.all++;
        if (sql.startsWith('begin')) c.transactions++;
        else if (!sql.startsWith('commit') && !sql.startsWith('rollback')) c.statements++;
        if (sql.startsWith('select')) c.selects++;
      }
      seen = [];
      return c;
    },
  };
}

/** Sends n messages at once, `perSend` recipients a send, and waits until they arrived and no statement ran for 500 ms. */
async function sendAndSettle(app: TestApp, sink: SmtpSink, key: string, n: number, perSend = 1): Promise<void> {
  const before = sink.messages.length;
  const live = app.api.withKey(key);
  const to = (i: number) => Array.from({ length: Math.min(perSend, n - i) }, (_, j) => `u${before + i + j}@sink.test`);
  const starts = Array.from({ length: Math.ceil(n / perSend) }, (_, k) => k * perSend);
  const sends = starts.map((i) => live.post('/v1/messages/send', { from: 'App <app@sender.bench>', to: to(i), subject: 'Hello', text: 'Hello there.\n'.repeat(300) }));
  for (const res of await Promise.all(sends)) if (res.status !== 202) throw new Error(`send: ${res.status} ${res.text}`);
  await sink.waitFor(before + n, 120_000);
  let lastQuery = performance.now();
  const onQuery = () => (lastQuery = performance.now());
  app.db.on('query', onQuery);
  while (performance.now() - lastQuery < 500) await sleep(100);
  app.db.off('query', onQuery);
}

export async function statements(o: CompareOptions): Promise<Row> {
  const [dns, sink] = [await startDnsServer(), await startSmtpSink({ host: '127.0.0.1' })];
  const trips = countDriverTrips();
  const app = await startTestApp({ ...deliveryConfig(dns.address, sink.port), log: { level: 'silent' } });
  try {
    pointMx(dns, 'sink.test', [{ name: 'mx.sink.test', address: '127.0.0.1' }]);
    await verifiedDomain(app, dns, 'sender.bench');
    const key = await createKey(app, 'live', ['messages:send']);
    const count = counter(app, () => trips.trips.length);
    await sendAndSettle(app, sink, key, 1);
    const cold = count.take();
    await sendAndSettle(app, sink, key, 1);
    const one = count.take();
    await sendAndSettle(app, sink, key, o.burst);
    const burst = count.take();
    await sendAndSettle(app, sink, key, o.burst, 10);
    const tens = count.take();
    const per = (x: number) => (x / o.burst).toFixed(2);
    const alone = (c: Count) =>
      `${c.all} statements with BEGIN and COMMIT (${c.statements} without, ${c.selects} SELECT) in ${c.transactions} transactions; the pools worker's timer ${c.timer} more; ${c.trips} trips to SQLite's thread`;
    console.log(`  the process's first message (cold caches), accept → delivered: ${alone(cold)}`);
    console.log(`  one message alone, accept → delivered: ${alone(one)}`);
    const inBurst = (c: Count) =>
      `${c.all} statements with BEGIN and COMMIT (${c.statements} without, ${c.selects} SELECT) in ${c.transactions} transactions = ${per(c.all)} statements and ${per(c.transactions)} transactions per message; the pools worker's timer ${c.timer} more; ${c.trips} trips to SQLite's thread = ${per(c.trips)} per message`;
    console.log(`  burst of ${o.burst} single sends: ${inBurst(burst)}`);
    console.log(`  burst of ${o.burst} as sends of ten recipients: ${inBurst(tens)}`);
    return {
      target: `SQL statements on the writer (≤ 12 alone, < 2 per message in a burst of ${o.burst})`,
      postfix: 'n/a',
      pigeon: `alone ${one.all} (first message ${cold.all}); burst ${per(burst.all)}/message single sends, ${per(tens.all)} as sends of ten (${per(burst.transactions)} and ${per(tens.transactions)} transactions/message); trips to SQLite's thread: alone ${one.trips}, burst ${per(burst.trips)} and ${per(tens.trips)}/message`,
      command: `npm run bench compare -- --only=statements --burst=${o.burst}`,
    };
  } finally {
    await app.stop();
    trips.restore();
    await sink.close();
    await dns.close();
  }
}
