import type { Knex } from 'knex';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../src/clock';
import { createKey, onPostgres, startTestApp, TestApp } from '../support/app';
import { filteredMessages } from '../../src/messages/repository';
import { otherAccount, pauseDelivery, simpleSend } from './helpers';

const clock = new FakeClock(Date.UTC(2026, 0, 5, 9, 0, 0));
let app: TestApp;
before(async () => {
  app = await startTestApp({}, { clock });
  await pauseDelivery(app); // these tests write attempts and events the way the MTA would
});
after(() => app.stop());

async function send(body = simpleSend(), api = app.api): Promise<string[]> {
  const res = await api.post('/v1/messages/send', body);
  assert.equal(res.status, 202, res.text);
  return res.body.data.map((d: { id: string }) => d.id);
}

test('GET /v1/messages/{id} shows the record with its attempts and events', async () => {
  const [id] = await send(simpleSend({ from: 'Ann <ann@example.com>', cc: ['c@example.net'], tags: ['t1'], metadata: { k: 'v' }, ip_pool: 'default', track_opens: true }));
  // The delivery worker is another module: write an attempt and a later event the way it would.
  await app.db('message_attempts').insert({ message_id: id, attempted_at: clock.now() + 1000, mx_host: 'mx.example.org', source_ip: '127.0.0.1', tls: true, tls_version: 'TLSv1.3', tls_verified: true, tls_policy: 'enforce', smtp_code: 250, enhanced_code: '2.0.0', response: '250 2.0.0 OK', outcome: 'delivered', duration_ms: 12 });
  await app.db('events').insert({ id: 'evt_zzzzzzzzzzzzzzzzzzzzzzzzzz', account_id: (await app.db('messages').where({ id }).first()).account_id, mode: 'test', type: 'message.delivered', message_id: id, data: JSON.stringify({ message_id: id }), created_at: clock.now() + 1000 });
  await app.db('messages').where({ id }).update({ status: 'delivered', sent_at: clock.now() + 900, delivered_at: clock.now() + 1000 });

  const res = await app.api.get(`/v1/messages/${id}`);
  assert.equal(res.status, 200);
  const m = res.body;
  assert.equal(m.id, id);
  assert.equal(m.status, 'delivered');
  assert.equal(m.mode, 'test');
  assert.equal(m.sandbox, true);
  assert.deepEqual(m.from, { email: 'ann@example.com', name: 'Ann' });
  assert.deepEqual(m.to, { email: 'rcpt@example.org', name: null, type: 'to' });
  assert.deepEqual(m.cc, ['c@example.net']);
  assert.equal(m.subject, 'Hello');
  assert.deepEqual(m.tags, ['t1']);
  assert.deepEqual(m.metadata, { k: 'v' });
  assert.equal(m.ip_pool, 'default');
  assert.equal(m.track_opens, true);
  assert.equal(m.domain_verified, false);
  assert.equal(m.created_at, '2026-01-05T09:00:00.000Z');
  assert.equal(m.delivered_at, '2026-01-05T09:00:01.000Z');
  assert.equal(m.sent_at, '2026-01-05T09:00:00.900Z');
  assert.deepEqual(m.attempts, [{ attempted_at: '2026-01-05T09:00:01.000Z', mx_host: 'mx.example.org', source_ip: '127.0.0.1', tls: true,
    tls_version: 'TLSv1.3', tls_verified: true, tls_policy: 'enforce', tls_failure: null, smtp_code: 250, enhanced_code: '2.0.0', response: '250 2.0.0 OK', outcome: 'delivered', duration_ms: 12, transcript: null }]);
  assert.deepEqual(m.events.map((e: { type: string }) => e.type), ['message.queued', 'message.delivered']);
  assert.equal((await app.api.get('/v1/messages/msg_00000000000000000000000000')).status, 404);
});

test('pages stay exact while messages arrive between them: nothing twice, nothing skipped', async () => {
  const existing = new Set<string>();
  for (let i = 0; i < 5; i++) for (const id of await send(simpleSend({ to: [`p${i}a@example.org`, `p${i}b@example.org`, `p${i}c@example.org`, `p${i}d@example.org`, `p${i}e@example.org`] }))) existing.add(id);
  const before = await app.db('messages').count({ n: '*' }).first();
  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const q: string = cursor ? `&cursor=${cursor}` : '';
    // Inserts race the page read, on purpose.
    const [res] = await Promise.all([app.api.get(`/v1/messages?limit=7${q}`), send(simpleSend({ to: [`late${pages}@example.org`, `late${pages}b@example.org`] }))]);
    assert.equal(res.status, 200);
    assert.ok(res.body.data.length <= 7);
    seen.push(...res.body.data.map((m: { id: string }) => m.id));
    cursor = res.body.pagination.next_cursor;
    assert.equal(res.body.pagination.has_more, cursor !== null);
    pages++;
  } while (cursor && pages < 100);
  assert.equal(new Set(seen).size, seen.length, 'no item twice');
  for (const id of existing) assert.ok(seen.includes(id), `${id} not skipped`);
  const sorted = [...seen].sort().reverse();
  assert.deepEqual(seen, sorted, 'newest first');
  assert.ok(Number(before?.n) >= existing.size);
});

test('list filters by status, to, from, tag and creation time', async () => {
  clock.set(Date.UTC(2026, 0, 6, 12, 0, 0));
  const [tagged] = await send(simpleSend({ from: 'filter@example.com', to: ['Someone@Filter.Example'], tags: ['spring_sale', 'vip'] }));
  clock.advance(60_000);
  const [scheduled] = await send(simpleSend({ from: 'filter@example.com', to: ['other@filter.example'], send_at: new Date(clock.now() + 3600_000).toISOString() }));
  const ids = async (q: string) => {
    const res = await app.api.get(`/v1/messages?limit=100&${q}`);
    assert.equal(res.status, 200, res.text);
    return res.body.data.map((m: { id: string }) => m.id);
  };
  assert.deepEqual(await ids('from=filter@example.com'), [scheduled, tagged]);
  assert.deepEqual(await ids('to=Someone@filter.example'), [tagged]);
  assert.deepEqual(await ids('tag=spring_sale'), [tagged]);
  assert.deepEqual(await ids('tag=spring%25sale'), [], 'a LIKE wildcard in a tag matches only itself');
  assert.deepEqual(await ids('tag=spring'), [], 'a tag matches whole tags only');
  assert.deepEqual(await ids('status=scheduled'), [scheduled]);
  assert.deepEqual(await ids(`created_after=${encodeURIComponent('2026-01-06T12:00:30Z')}`), [scheduled]);
  assert.deepEqual(await ids(`from=filter@example.com&created_before=${encodeURIComponent('2026-01-06T12:00:30Z')}`), [tagged]);
  const res = await app.api.get('/v1/messages?from=filter@example.com&limit=1');
  assert.equal(res.body.pagination.total, 2);
  assert.equal(res.body.pagination.has_more, true);
});

test('a bad limit, cursor or filter is a 400 naming the parameter', async () => {
  for (const [q, param] of [['limit=0', 'limit'], ['limit=101', 'limit'], ['limit=abc', 'limit'], ['limit=2.5', 'limit'], ["cursor=x'%20or%201=1", 'cursor'], ['status=lost', 'status'], ['created_after=yesterday', 'created_after']]) {
    const res = await app.api.get(`/v1/messages?${q}`);
    assert.equal(res.status, 400, `${q}: ${res.text}`);
    assert.equal(res.body.error.param, param, q);
  }
});

test('a live key never sees test messages, and another account sees none of ours', async () => {
  const [id] = await send();
  const live = app.api.withKey(await createKey(app, 'live', ['messages:read', 'messages:send']));
  assert.equal((await live.get(`/v1/messages/${id}`)).status, 404);
  assert.equal((await live.delete(`/v1/messages/${id}`)).status, 404);
  const liveList = await live.get('/v1/messages');
  assert.equal(liveList.body.pagination.total, 0);

  const other = app.api.withKey((await otherAccount(app)).key);
  assert.equal((await other.get(`/v1/messages/${id}`)).status, 404);
  assert.equal((await other.delete(`/v1/messages/${id}`)).status, 404);
  assert.equal((await other.get('/v1/messages')).body.pagination.total, 0);
  const [theirs] = await send(simpleSend(), other);
  assert.equal((await app.api.get(`/v1/messages/${theirs}`)).status, 404);
  assert.ok(!(await app.api.get('/v1/messages?limit=100')).body.data.some((m: { id: string }) => m.id === theirs));
});

test('each route demands its scope', async () => {
  const [id] = await send();
  const readOnly = app.api.withKey(await createKey(app, 'test', ['messages:read']));
  const sendOnly = app.api.withKey(await createKey(app, 'test', ['messages:send']));
  const denied = async (res: { status: number; body: { error: { code: string } } }) => {
    assert.equal(res.status, 403);
    assert.equal(res.body.error.code, 'insufficient_scope');
  };
  await denied(await readOnly.post('/v1/messages/send', simpleSend()));
  await denied(await readOnly.delete(`/v1/messages/${id}`));
  await denied(await readOnly.post('/v1/templates', { name: 'x', subject: 'x', text: 'x' }));
  await denied(await readOnly.get('/v1/templates'));
  await denied(await sendOnly.get(`/v1/messages/${id}`));
  await denied(await sendOnly.get('/v1/messages'));
  assert.equal((await readOnly.get(`/v1/messages/${id}`)).status, 200);
  assert.equal((await sendOnly.post('/v1/messages/send', simpleSend())).status, 202);
  assert.equal((await app.api.withKey('').get('/v1/messages')).status, 401);
});

test('get, list, filters and the queue\'s due query read through indexes, not table scans', { skip: onPostgres && 'EXPLAIN QUERY PLAN is SQLite\'s' }, async () => {
  const scope = { accountId: 'acc_x', mode: 'test' as const };
  const plan = async (sql: { sql: string; bindings: readonly Knex.Value[] }) =>
    (await app.db.raw(`EXPLAIN QUERY PLAN ${sql.sql}`, sql.bindings)).map((r: { detail: string }) => r.detail).join(' | ');
  const page = filteredMessages(app.db, scope, {}).where('id', '<', 'msg_z').orderBy('id', 'desc').limit(21).toSQL();
  assert.match(await plan(page), /USING (COVERING )?INDEX messages_list_idx/);
  assert.doesNotMatch(await plan(page), /TEMP B-TREE/, 'no sort: the index gives newest first');
  assert.match(await plan(filteredMessages(app.db, scope, {}).count({ n: '*' }).toSQL()), /USING (COVERING )?INDEX/);
  assert.match(await plan(filteredMessages(app.db, scope, { status: 'queued' }).orderBy('id', 'desc').limit(21).toSQL()), /INDEX messages_status_idx/);
  assert.match(await plan(filteredMessages(app.db, scope, { to: 'a@example.org' }).orderBy('id', 'desc').limit(21).toSQL()), /INDEX messages_(to|list)_idx/);
  assert.match(await plan(app.db('messages').where({ id: 'msg_x', account_id: 'acc_x', mode: 'test' }).toSQL()), /USING INDEX sqlite_autoindex_messages_1|PRIMARY KEY/);
  const due = app.db('messages').whereNotNull('next_attempt_at').where('next_attempt_at', '<=', 1).orderBy('next_attempt_at').limit(100).toSQL();
  assert.match(await plan(due), /INDEX messages_due_idx/);
  assert.match(await plan(app.db('events').where({ message_id: 'msg_x' }).toSQL()), /INDEX events_message_idx/);
});
