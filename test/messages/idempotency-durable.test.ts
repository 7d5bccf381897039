// A replayed answer (Idempotency-Key) promises what the first answer did: the messages survive power loss. Under
// synchronous=FULL the first request's commit is visible before the WAL sync that answers it (src/db/wal-sync.ts), so
// the replay must wait for a sync too, or a power loss could lose messages a 202 was given for.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { WalSync } from '../../src/db/wal-sync';
import { onPostgres, startTestApp, TestApp } from '../support/app';
import { pauseDelivery, simpleSend } from './helpers';

let app: TestApp;
before(async () => {
  app = await startTestApp();
  await pauseDelivery(app);
});
after(() => app.stop());

test('a replay is answered only after a sync of the WAL, like the request it replays', { skip: onPostgres }, async () => {
  await app.deps.writer.drained(); // what the start wrote is synced: from here, each sync asked for is counted
  // The app's own WalSync, its fdatasync held until the test lets it go, and its callers counted.
  const walSync = (app.deps.writer as unknown as { options: { walSync: WalSync } }).options.walSync;
  const internals = walSync as unknown as { sync(fd: number): Promise<void>; durable(): Promise<void> };
  const realSync = internals.sync.bind(walSync);
  const realDurable = internals.durable.bind(walSync);
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let asked = 0;
  internals.sync = async (fd) => {
    await gate;
    await realSync(fd);
  };
  internals.durable = () => {
    asked++;
    return realDurable();
  };
  try {
    const headers = { 'idempotency-key': 'replay-durable-1' };
    const first = app.api.post('/v1/messages/send', simpleSend(), headers);
    // committed (the key says done, visible to every connection), not yet synced
    while ((await app.db('idempotency_keys').where({ key: 'replay-durable-1', state: 'done' }).first()) === undefined) {
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    let replayAnswered = false;
    const replay = app.api.post('/v1/messages/send', simpleSend(), headers).then((res) => ((replayAnswered = true), res));
    // either the replay asks for a sync of its own (and waits), or it is answered without one
    while (!replayAnswered && asked < 2) await new Promise((resolve) => setTimeout(resolve, 1));
    assert.equal(replayAnswered, false, 'the replay was answered while the WAL was not synced');
    release();
    const [a, b] = await Promise.all([first, replay]);
    assert.equal(a.status, 202);
    assert.equal(b.status, 202);
    assert.equal(b.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(b.body, a.body);
  } finally {
    release();
    internals.sync = realSync;
    internals.durable = realDurable;
  }
});
