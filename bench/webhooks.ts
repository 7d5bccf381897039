/*
 * Webhook benchmarks (numbers, not pass/fail): what the event sink adds to a
 * transaction, how fast the dispatcher empties a backlog to a loopback
 * receiver, what a claim pass costs with a dead endpoint's backlog, and how a
 * healthy endpoint fares next to a hanging one.
 *   npx tsc -p tsconfig.json && node dist/bench/webhooks.js
 */
import { performance } from 'node:perf_hooks';
import { iso } from '../src/clock';
import { newId } from '../src/ids';
import { messageEventData, recordEvent } from '../src/events/record';
import { dueCandidates } from '../src/webhooks/deliveries';
import { liveApi, startTestApp, TestApp } from '../test/support/app';
import { startWebhookReceiver } from '../test/support/webhook-receiver';

async function record(app: TestApp, accountId: string, count: number, perTx = 100): Promise<void> {
  for (let done = 0; done < count; done += perTx) {
    await app.db.transaction(async (trx) => {
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

async function drainRate(n: number, concurrency: number): Promise<{ perSecond: number; p50: number; p99: number }> {
  const receiver = await startWebhookReceiver();
  try {
    return await withApp({ webhooks: { concurrency, perWebhookConcurrency: concurrency } }, async (app, accountId) => {
      // A live key's webhook: it receives the live events recorded above (a sandbox key's would get none).
      await (await liveApi(app, ['webhooks:manage'])).post('/v1/webhooks', { url: receiver.url, events: ['*'] });
      const t = performance.now();
      await record(app, accountId, n);
      await receiver.waitFor(n, 120_000);
      const perSecond = n / ((performance.now() - t) / 1000);
      const lat = (await app.db('webhook_attempts').pluck('latency_ms')).map(Number).sort((a, b) => a - b);
      return { perSecond, p50: lat[Math.floor(lat.length * 0.5)], p99: lat[Math.floor(lat.length * 0.99)] };
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

async function main(): Promise<void> {
  const f = (x: number) => x.toFixed(0);
  console.log(`event sink: ${f(await sinkCost(0))} events/s recorded with 0 webhooks, ${f(await sinkCost(3))} with 3 (100 events per transaction)`);
  for (const c of [1, 10]) {
    const r = await drainRate(2000, c);
    console.log(`dispatch, 2000 events to one loopback HTTP receiver, concurrency ${c}: ${f(r.perSecond)} deliveries/s (record + send), latency p50 ${r.p50} ms p99 ${r.p99} ms`);
  }
  for (const backlog of [1000, 20000]) {
    console.log(`claim pass with a dead endpoint's backlog of ${backlog} due rows + 20 idle webhooks: ${(await claimPassWithDeadBacklog(backlog)).toFixed(2)} ms`);
  }
  console.log(`healthy endpoint next to a hanging one (60 s timeout), 2000 events: ${f(await healthyNextToHanging(2000))} deliveries/s to the healthy one`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
