/**
 * Two nodes on one PostgreSQL database (LISTEN/NOTIFY, src/db/notify.ts): wake-ups and cache invalidations
 * made on node A reach node B at once. The clock is fake and never moves, and every assertion is about state
 * B would otherwise keep (an idle MTA with no timer, a cache whose entry lives 2 s or more of real time): only news
 * from A explains the result.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { revokeKey } from '../../src/auth/keys';
import { withDb } from '../../src/cli/common';
import { FakeClock } from '../../src/clock';
import { parseConfig } from '../../src/config';
import type { BusNews, PgBus } from '../../src/db/notify';
import type { Mta } from '../../src/delivery/mta';
import { newId } from '../../src/ids';
import { createKey, liveApi, startTestApp, type ApiClient, type TestApp } from '../support/app';
import { makeUser, signedIn } from '../support/console';
import { eventually } from '../support/wait';
import { startWebhookReceiver } from '../support/webhook-receiver';
import { addVerifiedDomain, defaultAccountId, simpleSend } from '../messages/helpers';

const mtaOf = (app: TestApp) => app.workers.find((w) => w.name === 'delivery') as Mta;
const busOf = (app: TestApp) => app.bus as PgBus;
const statusOf = async (app: TestApp, id: string) => ((await app.db('messages').where({ id }).first()) as { status: string }).status;

/** Resolves once `to` has received a marker `from` sent after everything `from` published so far (news is delivered in order). */
async function synced(from: TestApp, to: TestApp): Promise<void> {
  const id = newId('sync');
  const arrived = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('node B never heard from node A')), 10_000);
    const on = (news: BusNews) => {
      if (!('sync' in news) || news.sync !== id) return;
      clearTimeout(timer);
      busOf(to).off('news', on);
      resolve();
    };
    busOf(to).on('news', on);
  });
  await busOf(from).flushed();
  busOf(from).publish({ sync: id });
  await arrived;
}

describe('two nodes, one PostgreSQL database', () => {
  const clock = new FakeClock();
  let a: TestApp;
  let b: TestApp;
  let liveA: ApiClient;

  before(async () => {
    a = await startTestApp({ node: { id: 'node-a' } }, { clock });
    b = await startTestApp({ node: { id: 'node-b' } }, { clock, sameDatabaseAs: a });
    liveA = await liveApi(a);
    await mtaOf(a).stop(); // A accepts but never delivers: what goes out, B sends
  });
  after(async () => {
    await b?.stop();
    await a?.stop();
  });

  it('a sandbox send accepted on A is delivered by B without any clock advance', async () => {
    await mtaOf(b).runOnce(); // B is idle: nothing due, no timer armed
    const sent = await a.api.post('/v1/messages/send', simpleSend());
    assert.equal(sent.status, 202, sent.text);
    const id = sent.body.data?.[0]?.id ?? sent.body.id;
    await eventually(async () => (await statusOf(a, id)) === 'delivered', 10_000, 'B delivers the message accepted on A');
    const lease = await a.db('events').where({ message_id: id, type: 'message.delivered' }).first();
    assert.ok(lease, 'delivered and recorded');
  });

  it('a key revoked on A is refused on B at once, though B had it cached', async () => {
    const secret = await createKey(a, 'test', ['account:read']);
    const key = b.api.withKey(secret);
    assert.equal((await key.get('/v1/account')).status, 200, 'B knows the key (and caches it)');
    const id = (await a.db('api_keys').orderBy('id', 'desc').first()).id as string;
    assert.equal((await liveA.delete(`/v1/api-keys/${id}`)).status, 200);
    await synced(a, b);
    assert.equal((await key.get('/v1/account')).status, 401);
  });

  it('a domain deleted on A is refused for sending on B', async () => {
    const accountId = await defaultAccountId(a);
    await addVerifiedDomain(a, accountId, 'gone.example');
    const liveB = b.api.withKey(liveA.key);
    const later = new Date(clock.now() + 86_400_000).toISOString(); // scheduled: nothing is sent anywhere
    const send = () => liveB.post('/v1/messages/send', simpleSend({ from: 'news@gone.example', send_at: later }));
    assert.equal((await send()).status, 202, 'B knows the domain (and caches it)');
    assert.equal((await liveA.delete('/v1/domains/gone.example')).status, 200);
    await synced(a, b);
    const refused = await send();
    assert.equal(refused.status, 422, refused.text);
    assert.equal(refused.body.error.code, 'domain_not_verified');
  });

  it('a webhook created on A receives the next event B records, and once deleted on A none', async () => {
    const accountId = await defaultAccountId(a);
    await addVerifiedDomain(a, accountId, 'hooked.example');
    await synced(a, b); // B forgot its copy of the account's domains
    const receiver = await startWebhookReceiver();
    const liveB = b.api.withKey(liveA.key);
    const later = new Date(clock.now() + 86_400_000).toISOString(); // scheduled: nothing is sent anywhere
    const queuedOnB = async () => {
      const sent = await liveB.post('/v1/messages/send', simpleSend({ from: 'news@hooked.example', send_at: later }));
      assert.equal(sent.status, 202, sent.text);
      const id = sent.body.data?.[0]?.id ?? sent.body.id;
      return a.db('webhook_deliveries as d').join('events as e', 'e.id', 'd.event_id').where('e.message_id', id).pluck('d.webhook_id');
    };
    try {
      assert.deepEqual(await queuedOnB(), [], 'B records message.queued with no webhook (and caches that)');
      const created = await liveA.post('/v1/webhooks', { url: receiver.url, events: ['message.queued'] });
      assert.equal(created.status, 201, created.text);
      await synced(a, b);
      assert.deepEqual(await queuedOnB(), [created.body.id]);
      assert.equal((await liveA.delete(`/v1/webhooks/${created.body.id}`)).status, 200);
      await synced(a, b);
      assert.deepEqual(await queuedOnB(), [], 'B forgot the deleted webhook (a delivery row for it would fail the send)');
    } finally {
      await receiver.close();
    }
  });

  it('a destination paused on A is skipped by B, fresh sends to it included', async () => {
    await makeUser(a, 'root@example.com', 'admin');
    const admin = await signedIn(a, 'root@example.com');
    assert.equal((await admin.post('/v1/operator/queue/paused.example/pause')).status, 200);
    await synced(a, b);
    // B reloads its in-memory copy (what its hand-off of fresh sends checks) on the news; wait for that read.
    await eventually(async () => (mtaOf(b) as unknown as { pausedDestinations: Set<string> }).pausedDestinations.has('paused.example'), 10_000, 'B knows the pause');
    const sent = await b.api.post('/v1/messages/send', simpleSend({ to: ['ann@paused.example'] }));
    assert.equal(sent.status, 202, sent.text);
    const id = sent.body.data?.[0]?.id ?? sent.body.id;
    await mtaOf(b).runOnce();
    assert.equal(await statusOf(a, id), 'queued', 'neither handed to B\'s MTA nor claimed by it');
  });

  it('a key revoked by the CLI on the same database is refused on B at once', async () => {
    const secret = await createKey(a, 'test', ['account:read']);
    const key = b.api.withKey(secret);
    const id = (await a.db('api_keys').orderBy('id', 'desc').first()).id as string;
    // The CLI's own code path (`pigeon keys revoke`), in this process so that B's cache is fresh when it runs.
    const config = parseConfig({ dataDir: a.dataDir, database: a.config.database, node: { id: 'node-a' } });
    await withDb(config, async (db) => {
      assert.equal((await key.get('/v1/account')).status, 200, 'B knows the key (and caches it)');
      await revokeKey(db, id, clock.now());
    });
    await synced(a, b); // the CLI's news went out before withDb returned, so before this marker
    assert.equal((await key.get('/v1/account')).status, 401);
  });

  it('the bus reconnects after its connection is killed and still delivers news', async () => {
    const old = busOf(b).backendPid;
    assert.ok(old);
    const reconnected = new Promise((resolve) => busOf(b).once('reconnected', resolve));
    await a.db.raw('SELECT pg_terminate_backend(?)', [old]);
    await reconnected;
    assert.notEqual(busOf(b).backendPid, old);

    const secret = await createKey(a, 'test', ['account:read']);
    const key = b.api.withKey(secret);
    assert.equal((await key.get('/v1/account')).status, 200);
    const id = (await a.db('api_keys').orderBy('id', 'desc').first()).id as string;
    assert.equal((await liveA.delete(`/v1/api-keys/${id}`)).status, 200);
    await synced(a, b);
    assert.equal((await key.get('/v1/account')).status, 401);
  });
});
