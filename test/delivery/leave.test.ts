// The MTA's outcomes leave its hands in one UPDATE per transaction (src/delivery/leave.ts): only rows whose lease is
// still the job's change, a column left undefined keeps its value, and on SQLite the rows go as one JSON value
// unless one of them holds a value JSON would change (then the same update is bound value by value).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../src/config';
import { openDatabase, type Db } from '../../src/db';
import { leaveAll, type LeaveRow } from '../../src/delivery/leave';

describe('leaving the MTA', () => {
  let dir: string;
  let db: Db;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-leave-'));
    db = openDatabase(parseConfig({ dataDir: dir }));
    // the columns the update reads and writes, nothing else
    await db.schema.createTable('messages', (t) => {
      t.string('id').primary();
      t.string('status');
      t.string('lease_owner');
      t.bigInteger('lease_expires_at');
      t.bigInteger('next_attempt_at');
      t.integer('attempts');
      t.text('last_response');
      t.bigInteger('sent_at');
      t.bigInteger('delivered_at');
      t.bigInteger('bounced_at');
      t.text('dkim');
      t.bigInteger('updated_at');
    });
  });
  after(async () => {
    await db.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const sending = (id: string, owner: string) => ({
    id, status: 'sending', lease_owner: owner, lease_expires_at: 9e12, next_attempt_at: 1, attempts: 0,
    last_response: 'earlier', sent_at: null, delivered_at: null, bounced_at: null, dkim: 'kept', updated_at: 1,
  });
  const delivered = (id: string, owner: string, response: string): LeaveRow => ({
    id, leaseOwner: owner, at: 1_800_000_000_000,
    update: { status: 'delivered', next_attempt_at: null, attempts: 1, last_response: response, delivered_at: 1_800_000_000_000 },
  });

  async function leave(rows: LeaveRow[]) {
    const sql: string[] = [];
    const seen = (q: { sql: string }) => sql.push(q.sql);
    db.on('query', seen);
    try {
      return { ours: await db.transaction((trx) => leaveAll(trx, rows)), json: sql.filter((s) => /update messages/i.test(s)).map((s) => /json_each/.test(s)) };
    } finally {
      db.off('query', seen);
    }
  }

  for (const [title, response, json] of [['as one JSON value', '250 2.0.0 ok', true], ['bound, when JSON would change a value', '250 lone \ud800', false]] as const) {
    it(`changes only the rows still leased to the job, ${title}`, async () => {
      const tag = json ? 'j' : 'b';
      await db('messages').insert([sending(`${tag}1`, 'job'), sending(`${tag}2`, 'job'), sending(`${tag}3`, 'another')]);
      const { ours, json: viaJson } = await leave([delivered(`${tag}1`, 'job', response), delivered(`${tag}2`, 'job', response), delivered(`${tag}3`, 'job', response)]);
      assert.deepEqual(viaJson, [json]);
      assert.deepEqual([...ours].sort(), [`${tag}1`, `${tag}2`]);
      const rows = await db('messages').whereIn('id', [`${tag}1`, `${tag}3`]).orderBy('id');
      assert.deepEqual(rows.map((r) => [r.status, r.lease_owner, r.next_attempt_at, r.attempts, r.delivered_at, r.sent_at, r.dkim, r.updated_at]), [
        ['delivered', null, null, 1, 1_800_000_000_000, null, 'kept', 1_800_000_000_000],
        ['sending', 'another', 1, 0, null, null, 'kept', 1],
      ]);
      assert.equal(rows[0].last_response, json ? response : '250 lone \ufffd');
    });
  }
});
