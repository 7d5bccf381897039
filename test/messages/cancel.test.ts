import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../src/clock';
import { startTestApp, TestApp } from '../support/app';
import { simpleSend, pauseDelivery } from './helpers';

const clock = new FakeClock(Date.UTC(2026, 0, 5, 9, 0, 0));
let app: TestApp;
before(async () => {
  app = await startTestApp({}, { clock });
  await pauseDelivery(app);
});
after(() => app.stop());

async function scheduleOne(): Promise<string> {
  const res = await app.api.post('/v1/messages/send', simpleSend({ send_at: new Date(clock.now() + 2 * 3600_000).toISOString() }));
  assert.equal(res.status, 202, res.text);
  assert.equal(res.body.data[0].status, 'scheduled');
  return res.body.data[0].id;
}

/** What the delivery worker's claim looks like: a conditional update on due, unleased, waiting rows. */
async function workerClaims(id: string, at: number): Promise<boolean> {
  const n = await app.db('messages')
    .where({ id })
    .whereIn('status', ['queued', 'scheduled', 'deferred'])
    .where('next_attempt_at', '<=', at)
    .andWhere((q) => q.whereNull('lease_expires_at').orWhere('lease_expires_at', '<=', at))
    .update({ status: 'sending', lease_owner: 'worker-1', lease_expires_at: at + 600_000 });
  return n === 1;
}

test('a scheduled message is cancelled: 200 with the record, out of the queue for good', async () => {
  const id = await scheduleOne();
  const res = await app.api.delete(`/v1/messages/${id}`);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.id, id);
  assert.equal(res.body.status, 'cancelled');
  const row = await app.db('messages').where({ id }).first();
  assert.equal(row.next_attempt_at, null);
  assert.equal(row.lease_owner, null);
  assert.equal(await workerClaims(id, clock.now() + 10 * 3600_000), false, 'a worker can no longer claim it');
  assert.equal((await app.api.get(`/v1/messages/${id}`)).body.status, 'cancelled');
});

test('cancelling twice is a 409 naming the status', async () => {
  const id = await scheduleOne();
  assert.equal((await app.api.delete(`/v1/messages/${id}`)).status, 200);
  const again = await app.api.delete(`/v1/messages/${id}`);
  assert.equal(again.status, 409);
  assert.equal(again.body.error.code, 'message_not_cancellable');
  assert.match(again.body.error.message, /'cancelled'/);
});

test('a queued message cannot be cancelled', async () => {
  const res = await app.api.post('/v1/messages/send', simpleSend());
  const id = res.body.data[0].id;
  const cancel = await app.api.delete(`/v1/messages/${id}`);
  assert.equal(cancel.status, 409);
  assert.match(cancel.body.error.message, /'queued'/);
  assert.equal((await app.db('messages').where({ id }).first()).status, 'queued');
});

test('every status other than scheduled refuses cancellation and stays as it was', async () => {
  // These states are reached by the delivery worker, built elsewhere: set them directly.
  for (const status of ['sending', 'sent', 'delivered', 'deferred', 'bounced', 'suppressed', 'failed']) {
    const id = await scheduleOne();
    await app.db('messages').where({ id }).update({ status });
    const res = await app.api.delete(`/v1/messages/${id}`);
    assert.equal(res.status, 409, status);
    assert.equal(res.body.error.code, 'message_not_cancellable');
    assert.match(res.body.error.message, new RegExp(`'${status}'`));
    assert.equal((await app.db('messages').where({ id }).first()).status, status);
  }
});

test('a scheduled message a worker has already claimed is not cancelled; one whose lease expired is', async () => {
  const claimed = await scheduleOne();
  assert.equal(await workerClaims(claimed, clock.now() + 3 * 3600_000), true);
  const res = await app.api.delete(`/v1/messages/${claimed}`);
  assert.equal(res.status, 409);
  assert.match(res.body.error.message, /'sending'/);

  // A worker that leases without changing the status still wins over cancel while its lease lives.
  const leased = await scheduleOne();
  await app.db('messages').where({ id: leased }).update({ lease_owner: 'worker-2', lease_expires_at: clock.now() + 60_000 });
  const refused = await app.api.delete(`/v1/messages/${leased}`);
  assert.equal(refused.status, 409);
  assert.match(refused.body.error.message, /being handed to delivery/);
  clock.advance(61_000);
  assert.equal((await app.api.delete(`/v1/messages/${leased}`)).status, 200);
});

test('cancel and a worker claim racing on one row: exactly one wins', async () => {
  for (let i = 0; i < 10; i++) {
    const id = await scheduleOne();
    const [cancel, claimed] = await Promise.all([app.api.delete(`/v1/messages/${id}`), workerClaims(id, clock.now() + 3 * 3600_000)]);
    assert.notEqual(cancel.status === 200, claimed, `round ${i}: cancel ${cancel.status}, claim ${claimed}`);
    const status = (await app.db('messages').where({ id }).first()).status;
    assert.equal(status, claimed ? 'sending' : 'cancelled');
  }
});

test('an unknown id is a 404', async () => {
  const res = await app.api.delete('/v1/messages/msg_00000000000000000000000000');
  assert.equal(res.status, 404);
});
