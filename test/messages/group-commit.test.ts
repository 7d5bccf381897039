import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../src/config';
import { Db, openDatabase } from '../../src/db';
import { GroupCommitter } from '../../src/messages/group-commit';
import { createKey, startTestApp } from '../support/app';
import { addVerifiedDomain, defaultAccountId, simpleSend, pauseDelivery } from './helpers';

let db: Db;
let dir: string;
before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-gc-'));
  db = openDatabase(parseConfig({ dataDir: dir }));
  await db.schema.createTable('t', (t) => t.string('id').primary());
});
after(async () => {
  await db.destroy();
  fs.rmSync(dir, { recursive: true, force: true });
});

const ids = async () => (await db('t').orderBy('id')).map((r) => r.id as string);
/** The writer gets the whole group: one multi-row insert, which fails as a whole on one bad row. */
const writer = async (trx: Db, items: string[]) => {
  await trx('t').insert(items.map((id) => ({ id })));
};

test('submissions made together commit in one transaction and each resolves after it', async () => {
  const groups: number[] = [];
  const gc = new GroupCommitter(db, { enabled: true, windowMs: 0, maxWeight: 100, onCommit: (n) => groups.push(n) }, writer);
  await Promise.all(['a1', 'a2', 'a3'].map((id) => gc.submit(1, id).then(async () => assert.ok((await ids()).includes(id)))));
  assert.deepEqual(groups, [3]);
});

test('one failing submission does not take its group down', async () => {
  await db('t').insert({ id: 'taken' });
  const gc = new GroupCommitter(db, { enabled: true, windowMs: 2, maxWeight: 100 }, writer);
  const results = await Promise.allSettled([gc.submit(1, 'b1'), gc.submit(1, 'taken'), gc.submit(1, 'b3')]);
  assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled']);
  const all = await ids();
  assert.ok(all.includes('b1') && all.includes('b3'));
});

test('groups are capped by weight, and disabled grouping commits each alone', async () => {
  const groups: number[] = [];
  const gc = new GroupCommitter(db, { enabled: true, windowMs: 0, maxWeight: 10, onCommit: (_n, w) => groups.push(w) }, writer);
  await Promise.all([6, 6, 6, 3].map((w, i) => gc.submit(w, `c${i}`)));
  assert.deepEqual(groups, [6, 6, 9]);

  const alone: number[] = [];
  const off = new GroupCommitter(db, { enabled: false, windowMs: 0, maxWeight: 10, onCommit: (n) => alone.push(n) }, writer);
  await Promise.all(['d1', 'd2', 'd3'].map((id) => off.submit(1, id)));
  assert.deepEqual(alone, [1, 1, 1]);
});

test('many concurrent sends over HTTP are all stored and billed, with either commit mode', async () => {
  for (const groupCommit of [true, false]) {
    const app = await startTestApp({ messages: { groupCommit } });
    await pauseDelivery(app);
    try {
      await addVerifiedDomain(app, await defaultAccountId(app), 'example.com');
      const live = app.api.withKey(await createKey(app, 'live', ['messages:send', 'account:read']));
      const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => live.post('/v1/messages/send', simpleSend({ to: [`u${i}@example.org`, `v${i}@example.org`] }))));
      assert.ok(answers.every((a) => a.status === 202));
      const stored = await app.db('messages').whereIn('id', answers.flatMap((a) => a.body.data.map((d: { id: string }) => d.id))).count({ n: '*' }).first();
      assert.equal(Number(stored?.n), 60);
      assert.equal(Number((await app.db('events').count({ n: '*' }).first())?.n), 60);
      assert.equal(Number((await app.db('message_contents').count({ n: '*' }).first())?.n), 30);
      assert.equal((await live.get('/v1/account')).body.usage.billable_messages, 60);
    } finally {
      await app.stop();
    }
  }
});
