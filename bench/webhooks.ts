/*
 * Webhook benchmarks (numbers, not pass/fail): what the event sink adds to a
 * transaction, how fast the dispatcher empties a backlog to a loopback
 * receiver, what a claim pass costs with a dead endpoint's backlog, and how a
 * healthy endpoint fares next to a hanging one.
 *   npm run bench webhooks [--events=2000] [--concurrency=1,10] [--parts=sink,dispatch,claim,hanging]
 * The dispatch figure also counts the SQL statements run while the backlog
 * drained (knex query event), minus those of the recording transactions.
 */
import { performance } from 'node:perf_hooks';
import { iso } from '../src/clock';
import { newId } from '../src/ids';
import { messageEventData, recordEvent } from '../src/events/record';
import { dueCandidates } from '../src/webhooks/claims';
import { liveApi, startTestApp, TestApp } from '../test/support/app';
import { startWebhookReceiver } from '../test/support/webhook-receiver';

/** Statements of transactions that record events: the event path's, not the dispatcher's. */
const RECORDING = 'select 1 as bench_recording';

async function record(app: TestApp, accountId: string, count: number, perTx = 100): Promise<void> {
  for (let done = 0; done < count; done += perTx) {
    await app.db.transaction(async (trx) => {
      await trx.raw(RECORDING);
      for (let i = 0; i < Math.min(perTx, count - done); i++) {
        const at = app.deps.clock.now();
        const m = { id: newId('msg'), mode: 'live' as const, toEmail: `u${i}@example.org`, fromEmail: 'app@shop.example', tags: ['bench'], metadata: {} };
        await recordEvent(trx, { accountId, mode: 'live', type: 'message.delivered', messageId: m.id, data: messageEventData(m, { delivered_at: iso(at) }), at });
      }
    });
  }
  app.deps.signals.emit('webhooksChanged');
}

async function withApp<T>(overrides: Parameters<typeof startTestApp>[0], fn: (app: TestApp, accountId: string) => Promise<T>): Promise<T> {
  const app = await startTestApp({ log: { level: 'silent' }, ...overrides });
  try {
    return await fn(app, (await app.api.get('/v1/account')).body.id);
  } finally {
    await app.stop();
  }
}

async function sinkCost(webhooks: number): Promise<number> {
  return withApp({ webhooks: { pollIntervalMs: 3_600_000 } }, async (app, accountId) => {
    for (let i = 0; i < webhooks; i++) await app.db('webhooks').insert({ id: newId('wh'), account_id: accountId, url: 'http://127.0.0.1:9/', events: '["*"]', enabled: false, secret: 's'.repeat(20), created_at: 0, updated_at: 0 });
    await app.db('webhooks').update({ enabled: true });
    await app.workers.find((w) => w.name === 'webhooks')?.stop(); // measure the write path alone
    const n = 5000;
    const t = performance.now();
    await record(app, accountId, n);
    return n / ((performance.now() - t) / 1000);
  });
}

interface Drain { perSecond: number; p50: number; p99: number; statementsPerDelivery: number; connections: number }

/** Counts statements outside the recording transactions while fn runs. */
async function countingStatements(app: TestApp, fn: () => Promise<void>): Promise<number> {
  const log: Array<{ sql: string; __knexTxId?: string }> = [];
  const listener = (q: { sql: string; __knexTxId?: string }) => log.push(q);
  app.db.on('query', listener);
  try {
    await fn();
  } finally {
    app.db.off('query', listener);
  }
  const recording = new Set(log.filter((q) => q.sql === RECORDING).map((q) => q.__knexTxId));
  return log.filter((q) => !q.__knexTxId || !recording.has(q.__knexTxId)).length;
}

async function allRecorded(app: TestApp, n: number): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (app.logs.filter((l) => l.includes('"webhook delivered"')).length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
}

async function drainRate(n: number, concurrency: number): Promise<Drain> {
  const receiver = await startWebhookReceiver();
  try {
    // info level: the 'webhook delivered' lines tell when every result is on disk without a query.
    return await withApp({ log: { level: 'info' }, webhooks: { concurrency, perWebhookConcurrency: concurrency } }, async (app, accountId) => {
      // A live key's webhook: it receives the live events recorded above (a sandbox key's would get none).
      await (await liveApi(app, ['webhooks:manage'])).post('/v1/webhooks', { url: receiver.url, events: ['*'] });
      const t = performance.now();
      const statements = await countingStatements(app, async () => {
        await record(app, accountId, n);
        await receiver.waitFor(n, 120_000);
        await allRecorded(app, n);
      });
      const perSecond = n / ((performance.now() - t) / 1000);
      const lat = (await app.db('webhook_attempts').pluck('latency_ms')).map(Number).sort((a, b) => a - b);
      return { perSecond, p50: lat[Math.floor(lat.length * 0.5)], p99: lat[Math.floor(lat.length * 0.99)], statementsPerDelivery: statements / n, connections: receiver.connections() };
    });
  } finally {
    await receiver.close();
  }
}

async function claimPassWithDeadBacklog(backlog: number): Promise<number> {
  return withApp({ webhooks: { pollIntervalMs: 3_600_000 } }, async (app, accountId) => {
    await app.workers.find((w) => w.name === 'webhooks')?.stop();
    await app.api.post('/v1/webhooks', { url: 'http://127.0.0.1:9/dead', events: ['*'] });
    for (let i = 0; i < 20; i++) await app.api.post('/v1/webhooks', { url: 'http://127.0.0.1:9/other', events: ['message.bounced'] });
    await record(app, accountId, backlog, 500);
    const rounds = 200;
    const t = performance.now();
    for (let i = 0; i < rounds; i++) await dueCandidates(app.db, { now: app.deps.clock.now(), perWebhook: 2, limit: 20, skipWebhooks: [] });
    return (performance.now() - t) / rounds;
  });
}

async function healthyNextToHanging(n: number): Promise<number> {
  const hanging = await startWebhookReceiver({ respond: () => ({ hang: true }) });
  const healthy = await startWebhookReceiver();
  try {
    return await withApp({ webhooks: { timeoutMs: 60_000 } }, async (app, accountId) => {
      await app.api.post('/v1/webhooks', { url: hanging.url, events: ['*'] });
      await app.api.post('/v1/webhooks', { url: healthy.url, events: ['*'] });
      const t = performance.now();
      await record(app, accountId, n);
      await healthy.waitFor(n, 120_000);
      return n / ((performance.now() - t) / 1000);
    });
  } finally {
    await Promise.all([hanging.close(), healthy.close()]);
  }
}

function option(args: string[], name: string, fallback: string): string {
  return args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
}

export async function run(args: string[]): Promise<void> {
  const f = (x: number) => x.toFixed(0);
  const n = Number(option(args, 'events', '2000'));
  const parts = option(args, 'parts', 'sink,dispatch,claim,hanging').split(',');
  if (parts.includes('sink')) console.log(`event sink: ${f(await sinkCost(0))} events/s recorded with 0 webhooks, ${f(await sinkCost(3))} with 3 (100 events per transaction)`);
  for (const c of parts.includes('dispatch') ? option(args, 'concurrency', '1,10').split(',').map(Number) : []) {
    const r = await drainRate(n, c);
    console.log(`dispatch, ${n} events to one loopback HTTP receiver, concurrency ${c}: ${f(r.perSecond)} deliveries/s (record + send + results on disk), `
      + `${r.statementsPerDelivery.toFixed(2)} SQL statements per delivery, ${r.connections} TCP connections, latency p50 ${r.p50} ms p99 ${r.p99} ms`);
  }
  for (const backlog of parts.includes('claim') ? [1000, 20000] : []) {
    console.log(`claim pass with a dead endpoint's backlog of ${backlog} due rows + 20 idle webhooks: ${(await claimPassWithDeadBacklog(backlog)).toFixed(2)} ms`);
  }
  if (parts.includes('hanging')) console.log(`healthy endpoint next to a hanging one (60 s timeout), ${n} events: ${f(await healthyNextToHanging(n))} deliveries/s to the healthy one`);
}
