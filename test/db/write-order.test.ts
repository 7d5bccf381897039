// The kept writes of a writer transaction go out in waves on SQLite: a write waits only for earlier writes its
// rows refer to through a foreign key (read from the schema), a table the schema does not know waits for
// everything before it, and a child written in the same transaction as its parent still finds the parent.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../src/config';
import { migrateLatest, openDatabase, type Db } from '../../src/db';
import { insertRows } from '../../src/db/buffer';
import { loadWriteOrder, wavesOf, type ForeignKey, type WriteOrder } from '../../src/db/write-order';
import { Writer } from '../../src/db/writer';

const tables = (waves: Array<Array<{ table: string }>>) => waves.map((w) => w.map((x) => x.table));

describe('write waves', () => {
  const fk = (parent: string, from: string, to = 'id'): ForeignKey => ({ parent, from: [from], to: [to] });
  const order: WriteOrder = new Map([
    ['message_contents', []],
    ['messages', [fk('accounts', 'account_id'), fk('message_contents', 'content_id')]],
    ['message_attempts', [fk('messages', 'message_id')]],
    ['events', [fk('accounts', 'account_id')]],
    ['accounts', []],
  ]);
  const contents = { table: 'message_contents', rows: [{ id: 'c1' }] };
  const messages = { table: 'messages', rows: [{ id: 'm1', account_id: 'a1', content_id: 'c1' }] };
  const events = { table: 'events', rows: [{ id: 'e1', account_id: 'a1' }] };

  it('tables none of whose rows refer to rows of this transaction go together; a row\'s parent goes a wave before it', () => {
    const attempts = { table: 'message_attempts', rows: [{ message_id: 'm0' }, { message_id: 'm1' }] };
    assert.deepEqual(tables(wavesOf([contents, messages, events, attempts], order)), [['message_contents', 'events'], ['messages'], ['message_attempts']]);
  });

  it('rows that refer only to rows written earlier (or to none) do not wait', () => {
    const attempts = { table: 'message_attempts', rows: [{ message_id: 'm0' }, { message_id: null }] };
    assert.deepEqual(tables(wavesOf([contents, messages, events, attempts], order)), [['message_contents', 'events', 'message_attempts'], ['messages']]);
  });

  it('a table the order does not know waits for everything before it; without an order every write is its own wave', () => {
    const unknown = { table: 'unknown', rows: [{}] };
    const accounts = { table: 'accounts', rows: [{ id: 'a2' }] };
    assert.deepEqual(tables(wavesOf([events, unknown, accounts], order)), [['events', 'accounts'], ['unknown']]);
    assert.deepEqual(tables(wavesOf([contents, events, accounts], undefined)), [['message_contents'], ['events'], ['accounts']]);
  });

  it('a key whose parent column is not named is taken to refer', () => {
    const loose: WriteOrder = new Map([['message_attempts', [{ parent: 'messages', from: ['message_id'], to: [null] }]], ['messages', []]]);
    const attempts = { table: 'message_attempts', rows: [{ message_id: 'm0' }] };
    assert.deepEqual(tables(wavesOf([messages, attempts], loose)), [['messages'], ['message_attempts']]);
  });
});

describe('write waves on the schema', () => {
  let dir: string;
  let db: Db;
  let order: WriteOrder;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-waves-'));
    db = openDatabase(parseConfig({ dataDir: dir }));
    await migrateLatest(db);
    order = await loadWriteOrder(db);
  });
  after(async () => {
    await db.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('reads each table\'s parents from its foreign keys', () => {
    const parents = (table: string) => (order.get(table) ?? []).map((k) => `${k.from.join(',')}->${k.parent}.${k.to.join(',')}`).sort();
    assert.deepEqual(parents('messages'), ['account_id->accounts.id', 'content_id->message_contents.id']);
    assert.deepEqual(parents('message_attempts'), ['message_id->messages.id']);
    assert.deepEqual(parents('message_contents'), []);
  });

  it('a content, its message, the attempt and an event written in one transaction all land, in the order their keys need', async () => {
    const now = Date.now();
    await db('accounts').insert({ id: 'acc_w', name: 'waves', created_at: now });
    const writer = new Writer(db, { maxWeight: 100, windowMs: 0, writeOrder: order });
    const statements: string[] = [];
    const count = (q: { sql: string }) => statements.push(q.sql);
    db.on('query', count);
    await writer.run(async (trx) => {
      await insertRows(trx, 'message_contents', [{ id: 'cnt_w', raw: Buffer.from('Subject: x\r\n\r\nhi\r\n'), size: 18, created_at: now }]);
      await insertRows(trx, 'messages', [messageRow('msg_w', 'cnt_w', now)]);
      await insertRows(trx, 'message_attempts', [{ message_id: 'msg_w', attempted_at: now, outcome: 'delivered' }]);
      await insertRows(trx, 'events', [{ id: 'evt_w', account_id: 'acc_w', mode: 'live', type: 'message.delivered', message_id: 'msg_w', data: '{}', created_at: now }]);
    });
    db.off('query', count);
    assert.equal(await db('message_attempts').where({ message_id: 'msg_w' }).count({ n: '*' }).first().then((r) => Number(r?.n)), 1);
    assert.equal(await db('events').where({ id: 'evt_w' }).count({ n: '*' }).first().then((r) => Number(r?.n)), 1);
    // the event went out with the content (first wave); the message after its content, the attempt after its message
    const inserts = statements.filter((s) => /^insert/i.test(s)).map((s) => /INSERT INTO "(\w+)"/.exec(s)?.[1]);
    assert.deepEqual(inserts, ['message_contents', 'events', 'messages', 'message_attempts']);
    await writer.close();
  });
});

function messageRow(id: string, contentId: string, now: number): Record<string, unknown> {
  return {
    id, account_id: 'acc_w', mode: 'live', status: 'delivered', batch_id: 'bat_w', content_id: contentId, from_email: 'a@shop.test',
    to_email: 'b@example.test', recipient_domain: 'example.test', sending_domain: 'shop.test', message_id_header: `${id}@shop.test`,
    attempts: 1, created_at: now, updated_at: now,
  };
}
