/**
 * SQL statements per message, counted in process with knex's `query` event on
 * the app's database handle (app.db, the writer): one live message sent alone
 * through the API until the sink has it and the appliance has gone quiet, then
 * a burst of `burst` messages the same way. Background timers (webhook poll,
 * domain re-checks) are far apart, so what is counted is the message's path.
 */
import { createKey, startTestApp, type TestApp } from '../test/support/app';
import { startDnsServer } from '../test/support/dns-server';
import { startSmtpSink, type SmtpSink } from '../test/support/smtp-sink';
import { deliveryConfig, pointMx, verifiedDomain } from '../test/delivery/world';
import { sleep } from './compare-tools';
import type { CompareOptions, Row } from './compare';

interface Count {
  statements: number;
  selects: number;
  transactions: number;
}

function counter(app: TestApp): { take(): Count } {
  let c: Count = { statements: 0, selects: 0, transactions: 0 };
  app.db.on('query', (q: { sql: string }) => {
    const sql = q.sql.trimStart().toLowerCase();
    if (sql.startsWith('begin')) c.transactions++;
    else if (!sql.startsWith('commit') && !sql.startsWith('rollback')) c.statements++;
    if (sql.startsWith('select')) c.selects++;
  });
  return {
    take() {
      const taken = c;
      c = { statements: 0, selects: 0, transactions: 0 };
      return taken;
    },
  };
}

/** Sends n messages at once and waits until they arrived and no statement ran for 500 ms. */
async function sendAndSettle(app: TestApp, sink: SmtpSink, key: string, n: number): Promise<void> {
  const before = sink.messages.length;
  const live = app.api.withKey(key);
  const sends = Array.from({ length: n }, (_, i) => live.post('/v1/messages/send', { from: 'App <app@sender.bench>', to: [`u${before + i}@sink.test`], subject: 'Hello', text: 'Hello there.\n'.repeat(300) }));
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
  const app = await startTestApp({ ...deliveryConfig(dns.address, sink.port), log: { level: 'silent' } });
  try {
    pointMx(dns, 'sink.test', [{ name: 'mx.sink.test', address: '127.0.0.1' }]);
    await verifiedDomain(app, dns, 'sender.bench');
    const key = await createKey(app, 'live', ['messages:send']);
    const count = counter(app);
    await sendAndSettle(app, sink, key, 1);
    const one = count.take();
    await sendAndSettle(app, sink, key, o.burst);
    const burst = count.take();
    const per = (x: number) => (x / o.burst).toFixed(2);
    console.log(`  one message alone, accept → delivered: ${one.statements} statements (${one.selects} SELECT) in ${one.transactions} transactions`);
    console.log(`  burst of ${o.burst}: ${burst.statements} statements (${burst.selects} SELECT) in ${burst.transactions} transactions = ${per(burst.statements)} statements and ${per(burst.transactions)} transactions per message`);
    return {
      target: `SQL statements on the writer (≤ 12 alone, < 2 per message in a burst of ${o.burst})`,
      postfix: 'n/a',
      pigeon: `alone ${one.statements}; burst ${per(burst.statements)}/message (${per(burst.transactions)} transactions/message)`,
      command: `npm run bench compare -- --only=statements --burst=${o.burst}`,
    };
  } finally {
    await app.stop();
    await sink.close();
    await dns.close();
  }
}
