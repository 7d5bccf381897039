// Results written in batches: one transaction for many deliveries, and each delivery's state exactly right.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../src/clock';
import { getDelivery } from '../../src/webhooks/deliveries';
import { leaseCheckFailed, recordAttempts } from '../../src/webhooks/results';
import { AttemptRecorder, RIDE_PAUSE_MS } from '../../src/webhooks/recorder';
import { RETRY_DELAYS_MS } from '../../src/webhooks/schedule';
import { createWebhook, recordMessageEvent, startWebhookApp } from './helpers';
import { onPostgres, type TestApp } from '../support/app';

const OWNER = 'test-host/1/abcd';

/** A pending delivery row in the given state, leased to OWNER (the dispatcher is stopped; the rows are ours). */
async function leasedDelivery(app: TestApp, state: { attempts: number; cycleStart: number }, owner = OWNER) {
  await recordMessageEvent(app, { type: 'message.delivered' });
  const row = await app.db('webhook_deliveries').whereNull('lease_owner').where({ attempts: 0 }).orderBy('id', 'desc').first();
  await app.db('webhook_deliveries').where({ id: row.id })
    .update({ attempts: state.attempts, cycle_start: state.cycleStart, lease_owner: owner, lease_expires_at: app.deps.clock.now() + 60_000 });
  return (await getDelivery(app.db, row.id))!;
}

/** Runs `test` on an app with one webhook on message.delivered and its dispatcher stopped (leased rows are the test's). */
async function withLeasableApp(test: (app: TestApp, clock: FakeClock) => Promise<void>): Promise<void> {
  const clock = new FakeClock();
  const app = await startWebhookApp({}, { clock });
  try {
    await app.workers.find((w) => w.name === 'webhooks')!.stop();
    await createWebhook(app, { url: 'http://127.0.0.1:9/hook', events: ['message.delivered'] });
    await test(app, clock);
  } finally {
    await app.stop();
  }
}

const attempt = (success: boolean, statusCode: number | null, at: number) => ({
  attemptedAt: at, success, statusCode, latencyMs: 3, responseBody: success ? 'ok' : 'no', error: success ? null : `HTTP ${statusCode}`,
});

describe('webhook result batches', () => {
  it('one batch of two successes, a first 500, a sixth failure, a failed redelivery and a lost lease records each delivery exactly', () => withLeasableApp(async (app, clock) => {
    const ok1 = await leasedDelivery(app, { attempts: 0, cycleStart: 0 });
    const ok2 = await leasedDelivery(app, { attempts: 2, cycleStart: 0 });
    const first500 = await leasedDelivery(app, { attempts: 0, cycleStart: 0 });
    const sixth = await leasedDelivery(app, { attempts: 5, cycleStart: 0 });
    const redelivered = await leasedDelivery(app, { attempts: 6, cycleStart: 6 });
    const lost = await leasedDelivery(app, { attempts: 0, cycleStart: 0 }, 'another-host/2/ef01');
    const now = clock.now();
    const statements: string[] = [];
    const count = (q: { sql: string }) => statements.push(q.sql);
    app.db.on('query', count);
    const results = await recordAttempts(app.db, [
      { delivery: ok1, owner: OWNER, attempt: attempt(true, 200, now) },
      { delivery: ok2, owner: OWNER, attempt: attempt(true, 200, now) },
      { delivery: first500, owner: OWNER, attempt: attempt(false, 500, now) },
      { delivery: sixth, owner: OWNER, attempt: attempt(false, 500, now) },
      { delivery: redelivered, owner: OWNER, attempt: attempt(false, 503, now) },
      { delivery: lost, owner: OWNER, attempt: attempt(true, 200, now) },
    ], now);
    app.db.off('query', count);

    assert.deepEqual(results, [
      { result: 'succeeded', attempt: 1, nextAttemptAt: null },
      { result: 'succeeded', attempt: 3, nextAttemptAt: null },
      { result: 'retrying', attempt: 1, nextAttemptAt: now + RETRY_DELAYS_MS[0] },
      { result: 'failed', attempt: 6, nextAttemptAt: null },
      { result: 'retrying', attempt: 7, nextAttemptAt: now + RETRY_DELAYS_MS[0] },
      null,
    ]);
    const state = async (id: string) => {
      const d = (await getDelivery(app.db, id))!;
      return [d.status, d.attempts, d.nextAttemptAt, d.leaseOwner, d.lastStatusCode, d.completedAt];
    };
    assert.deepEqual(await state(ok1.id), ['succeeded', 1, null, null, 200, now]);
    assert.deepEqual(await state(ok2.id), ['succeeded', 3, null, null, 200, now]);
    assert.deepEqual(await state(first500.id), ['pending', 1, now + RETRY_DELAYS_MS[0], null, 500, null]);
    assert.deepEqual(await state(sixth.id), ['failed', 6, null, null, 500, now]);
    assert.deepEqual(await state(redelivered.id), ['pending', 7, now + RETRY_DELAYS_MS[0], null, 503, null]);
    assert.deepEqual(await state(lost.id), ['pending', 0, now, 'another-host/2/ef01', null, null], 'a row leased to another owner is untouched');
    const attempts = await app.db('webhook_attempts').orderBy('delivery_id');
    assert.equal(attempts.length, 5, 'no attempt row for the lost lease');
    // BEGIN, one UPDATE per distinct new state (succeeded 1st, succeeded 3rd, retrying 1st, failed, retrying 7th), one INSERT, COMMIT.
    assert.equal(statements.length, 8, statements.join('\n'));
    assert.equal(statements.filter((s) => /^insert/i.test(s)).length, 1);
  }));

  it('in the writer the attempts ride with the COMMIT, and on SQLite the UPDATE has one text for any number of rows', () => withLeasableApp(async (app, clock) => {
    const fresh = [];
    for (let i = 0; i < 3; i++) fresh.push(await leasedDelivery(app, { attempts: 0, cycleStart: 0 }));
    const [one, two, three] = fresh;
    const now = clock.now();
    const queries: Array<{ sql: string; ridesWithCommit?: boolean }> = [];
    const count = (q: { sql: string; ridesWithCommit?: boolean }) => queries.push(q);
    app.db.on('query', count);
    await app.deps.writer.run((trx) => recordAttempts(trx, [{ delivery: one, owner: OWNER, attempt: attempt(true, 200, now) }], now));
    await app.deps.writer.run((trx) => recordAttempts(trx, [two, three].map((delivery) => ({ delivery, owner: OWNER, attempt: attempt(true, 200, now) })), now));
    app.db.off('query', count);
    const updates = queries.filter((q) => /^update/i.test(q.sql)).map((q) => q.sql);
    assert.equal(updates.length, 2, queries.map((q) => q.sql).join('\n'));
    const inserts = queries.filter((q) => /^insert/i.test(q.sql) && q.sql.includes('webhook_attempts'));
    assert.equal(inserts.length, 2);
    if (!onPostgres) {
      assert.equal(updates[0], updates[1], 'one prepared statement for one row and for two');
      assert.ok(inserts.every((q) => q.ridesWithCommit), 'the attempts rode with the COMMIT');
    }
    const stored = await app.db('webhook_attempts').orderBy('delivery_id')
      .select('delivery_id', 'attempt', 'attempted_at', 'success', 'status_code', 'latency_ms', 'response_body', 'error');
    assert.deepEqual(stored.map((a) => ({ ...a, attempted_at: Number(a.attempted_at), success: Boolean(a.success) })), [one, two, three].map((d) => d.id).sort().map((id) => ({
      delivery_id: id, attempt: 1, attempted_at: now, success: true, status_code: 200, latency_ms: 3, response_body: 'ok', error: null,
    })));
    for (const d of [one, two, three]) assert.equal((await getDelivery(app.db, d.id))!.status, 'succeeded');
  }));

  it('riding with the COMMIT stores exactly what the answered way stores', () => withLeasableApp(async (app, clock) => {
    const now = clock.now();
    const odd = { ...attempt(false, 500, now), responseBody: `it's "odd" \u00e9\u{1F600}`, error: 'line\nbreak' };
    const kinds = [
      { state: { attempts: 0, cycleStart: 0 }, attempt: attempt(true, 200, now) },
      { state: { attempts: 0, cycleStart: 0 }, attempt: odd }, // retrying
      { state: { attempts: 5, cycleStart: 0 }, attempt: attempt(false, 503, now) }, // failed for good
    ];
    const answered: Awaited<ReturnType<typeof leasedDelivery>>[] = [];
    const rode: Awaited<ReturnType<typeof leasedDelivery>>[] = [];
    for (const k of kinds) answered.push(await leasedDelivery(app, k.state));
    for (const k of kinds) rode.push(await leasedDelivery(app, k.state));
    const queries: Array<{ sql: string; ridesWithCommit?: boolean }> = [];
    const count = (q: { sql: string; ridesWithCommit?: boolean }) => queries.push(q);
    const asked = await app.deps.writer.run((trx) => recordAttempts(trx, answered.map((delivery, i) => ({ delivery, owner: OWNER, attempt: kinds[i].attempt })), now));
    app.db.on('query', count);
    const ridden = await app.deps.writer.run((trx) => recordAttempts(trx, rode.map((delivery, i) => ({ delivery, owner: OWNER, attempt: kinds[i].attempt })), now, true));
    app.db.off('query', count);
    assert.deepEqual(ridden, asked);
    assert.deepEqual(ridden.map((r) => r?.result), ['succeeded', 'retrying', 'failed']);
    const written = queries.filter((q) => !/^(begin|commit)/i.test(q.sql));
    if (!onPostgres) assert.ok(written.length === 2 && written.every((q) => q.ridesWithCommit), written.map((q) => q.sql).join('\n'));
    const stored = async (ids: string[]) => {
      const out = [];
      for (const id of ids) {
        const { id: _d, created_at: _c, event_id: _e, ...row } = await app.db('webhook_deliveries').where({ id }).first();
        const { id: _a, delivery_id: _b, ...attemptRow } = await app.db('webhook_attempts').where({ delivery_id: id }).first();
        out.push({ row, attemptRow });
      }
      return out;
    };
    assert.deepEqual(await stored(rode.map((d) => d.id)), await stored(answered.map((d) => d.id)));
  }));

  it('a ridden batch with a lost lease or a deleted row fails alone; the recorder then answers each row exactly, and rides again later', () => withLeasableApp(async (app, clock) => {
    const now = clock.now();
    const record = (delivery: Awaited<ReturnType<typeof leasedDelivery>>) => ({ delivery, owner: OWNER, attempt: attempt(true, 200, now) });
    const kept = await leasedDelivery(app, { attempts: 0, cycleStart: 0 });
    const taken = await leasedDelivery(app, { attempts: 0, cycleStart: 0 }, 'another-host/2/ef01');
    const gone = await leasedDelivery(app, { attempts: 0, cycleStart: 0 });
    await app.db('webhook_deliveries').where({ id: gone.id }).del();
    const queries: Array<{ sql: string; ridesWithCommit?: boolean }> = [];
    const count = (q: { sql: string; ridesWithCommit?: boolean }) => queries.push(q);
    if (!onPostgres) {
      // each alone: the lease check (owner) and the row check (deleted) each fail the COMMIT; a neighbour in the
      // same writer group still commits (the writer splits the group), and the kept row is as it was
      for (const lost of [taken, gone]) {
        const neighbour = app.deps.writer.run((trx) => trx('webhooks').where({ id: lost.webhookId }).update({ updated_at: now + 1 }));
        await assert.rejects(app.deps.writer.run((trx) => recordAttempts(trx, [record(kept), record(lost)], now, true)), (err) => leaseCheckFailed(err));
        assert.equal(await neighbour, 1);
        assert.equal((await getDelivery(app.db, kept.id))!.leaseOwner, OWNER, 'rolled back');
      }
    }
    const recorder = new AttemptRecorder(app.deps.writer, clock);
    app.db.on('query', count);
    const answers = await Promise.all([kept, taken, gone].map((d) => recorder.record(record(d))));
    app.db.off('query', count);
    assert.deepEqual(answers, [{ result: 'succeeded', attempt: 1, nextAttemptAt: null }, null, null]);
    assert.equal((await getDelivery(app.db, kept.id))!.status, 'succeeded');
    assert.equal((await getDelivery(app.db, taken.id))!.leaseOwner, 'another-host/2/ef01', 'the other owner\'s row is untouched');
    assert.deepEqual((await app.db('webhook_attempts').whereIn('delivery_id', [kept.id, taken.id, gone.id])).map((a) => a.delivery_id), [kept.id]);
    // the lease-checked insert (the answered way's attempts ride too, but without the check)
    const rode = () => queries.filter((q) => q.ridesWithCommit && /LEFT JOIN "webhook_deliveries"/.test(q.sql)).length;
    if (!onPostgres) assert.equal(rode(), 1, 'the recorder rode first, then wrote the batch the answered way');

    // for a while after, batches take the answered way; then they ride again
    const next = async () => {
      queries.splice(0);
      app.db.on('query', count);
      assert.deepEqual(await recorder.record(record(await leasedDelivery(app, { attempts: 0, cycleStart: 0 }))), { result: 'succeeded', attempt: 1, nextAttemptAt: null });
      app.db.off('query', count);
    };
    await next();
    assert.equal(rode(), 0);
    clock.advance(RIDE_PAUSE_MS);
    await next();
    if (!onPostgres) assert.equal(rode(), 1);
  }));

  it('a batch whose write fails leaves every delivery as it was and answers each caller with the error', () => withLeasableApp(async (app, clock) => {
    const a = await leasedDelivery(app, { attempts: 0, cycleStart: 0 });
    const b = await leasedDelivery(app, { attempts: 0, cycleStart: 0 });
    const now = clock.now();
    // b's attempt breaks a NOT NULL column: the insert fails after both rows were updated in the transaction.
    await assert.rejects(recordAttempts(app.db, [
      { delivery: a, owner: OWNER, attempt: attempt(true, 200, now) },
      { delivery: b, owner: OWNER, attempt: { ...attempt(true, 200, now), latencyMs: null as unknown as number } },
    ], now), /NOT NULL constraint failed|violates not-null constraint/); // SQLite's words, PostgreSQL's
    // the same through the shared writer, where the attempts ride with the COMMIT: the COMMIT fails and rolls back
    await assert.rejects(app.deps.writer.run((trx) => recordAttempts(trx, [
      { delivery: a, owner: OWNER, attempt: attempt(true, 200, now) },
      { delivery: b, owner: OWNER, attempt: { ...attempt(true, 200, now), latencyMs: null as unknown as number } },
    ], now)), /NOT NULL constraint failed|violates not-null constraint/);
    for (const d of [a, b]) assert.deepEqual([(await getDelivery(app.db, d.id))!.status, (await getDelivery(app.db, d.id))!.leaseOwner], ['pending', OWNER]);
    assert.equal((await app.db('webhook_attempts').where({ delivery_id: a.id })).length, 0, 'no partial write');
  }));
});
