// A writing SQLite connection sends BEGIN with the transaction's first statement, and the writer's buffered rows
// with the COMMIT (src/db/commit-batch.ts): a group that only inserts is one trip to SQLite's thread. Errors keep
// their meaning, and nothing that rode with one transaction ever runs outside it. A few bytes ride as hex.
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sqlite3 from 'sqlite3';
import { parseConfig } from '../../src/config';
import { openDatabase, type Db } from '../../src/db';
import { insertRows } from '../../src/db/buffer';
import { rideWithCommit, sqlString } from '../../src/db/commit-batch';
import { RIDDEN_BLOB_BYTES } from '../../src/db/sql-values';
import { Writer } from '../../src/db/writer';
import { loadWriteOrder } from '../../src/db/write-order';
import { countDriverTrips } from '../support/driver-trips';

describe('transactions that batch their ends', () => {
  let dir: string;
  let db: Db;
  let writer: Writer;
  let counter: ReturnType<typeof countDriverTrips>;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-commit-batch-'));
    counter = countDriverTrips(); // before the connection is made: the statement cache binds the handle's methods then
    db = openDatabase(parseConfig({ dataDir: dir, database: { busyTimeoutMs: 100 } }), undefined, { syncBeside: true });
    await db.schema.createTable('items', (t) => {
      t.string('id').primary();
      t.string('note');
    });
    for (const table of ['blobs', 'more_blobs']) {
      await db.schema.createTable(table, (t) => {
        t.string('id').primary();
        t.binary('raw');
      });
    }
    writer = new Writer(db, { maxWeight: 100, windowMs: 0 });
  });
  after(async () => {
    counter.restore();
    await db.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => counter.trips.splice(0));
  afterEach(async () => {
    await db('items').del();
    await db('blobs').del();
    await db('more_blobs').del();
  });

  it('a writer group that only inserts is one trip: BEGIN, the rows and COMMIT in one exec', async () => {
    await Promise.all([
      writer.run((trx) => insertRows(trx, 'items', [{ id: 'a', note: `it's` }])),
      writer.run((trx) => insertRows(trx, 'items', [{ id: 'b', note: 'two\u0000parts' }])),
    ]);
    assert.deepEqual(counter.trips.map((t) => t.split(' ')[0]), ['exec'], counter.trips.join('\n'));
    assert.match(counter.trips[0], /^exec BEGIN IMMEDIATE/);
    assert.deepEqual(await db('items').orderBy('id'), [{ id: 'a', note: `it's` }, { id: 'b', note: 'two\u0000parts' }]);
  });

  it('a few bytes ride as hex with the COMMIT: a group of small accepts is one trip', async () => {
    const raw = Buffer.from([0, 39, 255, 92]); // NUL, quote, a byte no UTF-8 text has, backslash
    await writer.run(async (trx) => {
      await insertRows(trx, 'blobs', [{ id: 'x', raw }, { id: 'empty', raw: Buffer.alloc(0) }]);
      await insertRows(trx, 'items', [{ id: 'after-blob', note: null }]);
    });
    assert.deepEqual(counter.trips.map((t) => t.split(' ')[0]), ['exec'], counter.trips.join('\n'));
    assert.deepEqual(await db('blobs').orderBy('id').select('id', 'raw'), [{ id: 'empty', raw: Buffer.alloc(0) }, { id: 'x', raw }]);
    assert.deepEqual(await db('items').select('id'), [{ id: 'after-blob' }]);
  });

  it('bytes beyond the budget are bound: their rows go first, with the BEGIN before them, and the rows after ride with the COMMIT', async () => {
    // rows of two tables (two statements) that fit the budget alone but not together: the transaction's budget is
    // shared, so the rows of the first table are bound (the budget goes to the last waves, which ride)
    const half = Buffer.alloc(RIDDEN_BLOB_BYTES / 2 + 1, 0xab);
    await writer.run(async (trx) => {
      await insertRows(trx, 'blobs', [{ id: 'x', raw: half }]);
      await insertRows(trx, 'more_blobs', [{ id: 'y', raw: half }]);
      await insertRows(trx, 'items', [{ id: 'after-blob', note: null }]);
    });
    assert.deepEqual(counter.trips.map((t) => t.split(/[ .]/)[0]), ['exec', 'statement', 'exec'], counter.trips.join('\n'));
    assert.match(counter.trips[1], /^statement\.\w+ x,/, 'the first table\'s row, bound');
    assert.match(counter.trips[2], /^exec INSERT INTO "more_blobs"/);
    assert.deepEqual(await db('blobs').select('id', 'raw'), [{ id: 'x', raw: half }]);
    assert.deepEqual(await db('more_blobs').select('id', 'raw'), [{ id: 'y', raw: half }]);
    assert.deepEqual(await db('items').select('id'), [{ id: 'after-blob' }]);
  });

  it('in a wave whose bytes are bound, the other tables ride: a large group of accepts is BEGIN, its contents, then the rest with the COMMIT', async () => {
    // the shape of an accept group: contents (bytes beyond the budget) and counters in the first wave, the rows
    // that refer to the contents in the second
    await db.schema.createTable('blob_refs', (t) => {
      t.string('id').primary();
      t.string('blob_id').references('id').inTable('blobs');
    });
    try {
      const ordered = new Writer(db, { maxWeight: 100, windowMs: 0, writeOrder: await loadWriteOrder(db) });
      const big = Buffer.alloc(RIDDEN_BLOB_BYTES + 1, 0xcd);
      counter.trips.splice(0);
      await ordered.run(async (trx) => {
        await insertRows(trx, 'blobs', [{ id: 'big', raw: big }]);
        await insertRows(trx, 'items', [{ id: 'beside', note: 'same wave' }]);
        await insertRows(trx, 'blob_refs', [{ id: 'ref', blob_id: 'big' }]);
      });
      assert.deepEqual(counter.trips.map((t) => t.split(/[ .]/)[0]), ['exec', 'statement', 'exec'], counter.trips.join('\n'));
      assert.match(counter.trips[1], /^statement\.\w+ big,/, 'the bytes, bound');
      assert.match(counter.trips[2], /^exec INSERT INTO "items"/, 'the rest of their wave rides, before the next wave');
      assert.deepEqual(await db('blobs').select('id', 'raw'), [{ id: 'big', raw: big }]);
      assert.deepEqual(await db('items').select('id', 'note'), [{ id: 'beside', note: 'same wave' }]);
      assert.deepEqual(await db('blob_refs').select('id', 'blob_id'), [{ id: 'ref', blob_id: 'big' }]);
    } finally {
      await db('blob_refs').del();
      await db.schema.dropTable('blob_refs');
    }
  });

  it('a transaction that runs no statement costs no trip, committed or rolled back', async () => {
    await db.transaction(async () => {});
    await assert.rejects(db.transaction(async () => {
      throw new Error('changed my mind');
    }), /changed my mind/);
    assert.deepEqual(counter.trips, []);
  });

  it('a statement after rows rode sends them first, inside the transaction; a rollback drops them', async () => {
    await assert.rejects(db.transaction(async (trx) => {
      assert.equal(await rideWithCommit(trx, [`INSERT INTO items (id) VALUES ('rode')`]), true);
      const seen = await trx('items').select('id');
      assert.deepEqual(seen, [{ id: 'rode' }], 'sent before the read, in the transaction');
      throw new Error('roll back');
    }), /roll back/);
    assert.deepEqual(await db('items').select('id'), [], 'rolled back with the transaction');
    await db.transaction(async (trx) => {
      assert.equal(await rideWithCommit(trx, [`INSERT INTO items (id) VALUES ('x')`]), true);
      throw new Error('roll back before any trip');
    }).catch(() => {});
    assert.deepEqual(await db('items').select('id'), [], 'nothing rode into the next statement');
  });

  it('a ridden row that fails fails the COMMIT with its own error; the group is split and the others commit', async () => {
    await writer.run((trx) => insertRows(trx, 'items', [{ id: 'taken', note: null }]));
    const [good, bad] = await Promise.allSettled([
      writer.run((trx) => insertRows(trx, 'items', [{ id: 'fresh', note: null }])),
      writer.run((trx) => insertRows(trx, 'items', [{ id: 'taken', note: 'again' }])),
    ]);
    assert.equal(good.status, 'fulfilled');
    assert.equal(bad.status, 'rejected');
    assert.match(String((bad as PromiseRejectedResult).reason), /UNIQUE constraint failed: items\.id/);
    assert.equal(((bad as PromiseRejectedResult).reason as { code?: string }).code, 'SQLITE_CONSTRAINT');
    assert.deepEqual((await db('items').orderBy('id').select('id', 'note')), [{ id: 'fresh', note: null }, { id: 'taken', note: null }]);
    await db.transaction((trx) => trx('items').insert({ id: 'after' })); // no transaction was left open
    assert.equal((await db('items').where({ id: 'after' })).length, 1);
  });

  it('a BEGIN that cannot take the write lock fails the group, and its rows never run later', async () => {
    const other = openDatabase(parseConfig({ dataDir: dir }));
    try {
      const holder = await other.client.acquireConnection();
      await new Promise<void>((resolve, reject) => holder.exec('BEGIN IMMEDIATE', (err: Error | null) => (err ? reject(err) : resolve())));
      await assert.rejects(writer.run((trx) => insertRows(trx, 'items', [{ id: 'locked-out', note: null }])), /SQLITE_BUSY/);
      await new Promise<void>((resolve, reject) => holder.exec('ROLLBACK', (err: Error | null) => (err ? reject(err) : resolve())));
      other.client.releaseConnection(holder);
      assert.deepEqual(await db('items').select('id'), [], 'the failed group\'s rows did not ride into this read');
      await writer.run((trx) => insertRows(trx, 'items', [{ id: 'later', note: null }]));
      assert.deepEqual(await db('items').select('id'), [{ id: 'later' }]);
    } finally {
      await other.destroy();
    }
  });

  it('statements sent together as a transaction\'s first wait for its BEGIN: none runs outside it', async () => {
    await db.raw('INSERT INTO items (id) VALUES (?)', ['warm']); // prepared and kept: it runs at once when asked
    await db('items').del();
    const exec = sqlite3.Database.prototype.exec;
    // the BEGIN sent ahead comes back late, as under load
    sqlite3.Database.prototype.exec = function (this: sqlite3.Database, sql: string, cb?: (err: Error | null) => void) {
      if (!/^BEGIN/.test(sql)) return exec.call(this, sql, cb);
      setTimeout(() => exec.call(this, sql, cb), 50);
      return this;
    };
    try {
      await assert.rejects(db.transaction(async (trx) => {
        await Promise.all(['a', 'b', 'c'].map((id) => trx.raw('INSERT INTO items (id) VALUES (?)', [id])));
        throw new Error('roll back');
      }), /roll back/);
    } finally {
      sqlite3.Database.prototype.exec = exec;
    }
    assert.deepEqual(await db('items').select('id'), [], 'all three were inside the transaction');
  });

  it('a BEGIN that fails before a statement fails the transaction with its own error; nothing after it runs', async () => {
    const other = openDatabase(parseConfig({ dataDir: dir }));
    const holder = await other.client.acquireConnection();
    const run = (sql: string) => new Promise<void>((resolve, reject) => holder.exec(sql, (err: Error | null) => (err ? reject(err) : resolve())));
    try {
      await run('BEGIN IMMEDIATE');
      await assert.rejects(db.transaction((trx) => trx('items').select('id')), /SQLITE_BUSY/);
      await assert.rejects(db.transaction(async (trx) => {
        await trx('items').select('id').catch(() => undefined); // a caller that carries on
        await run('ROLLBACK'); // the lock is free now: a write outside the transaction would succeed
        await trx('items').insert({ id: 'carried-on' });
      }), (err: Error & { code?: string }) => {
        assert.equal(err.code, 'SQLITE_BUSY');
        assert.ok(!/cannot rollback|no transaction/.test(err.message), err.message);
        return true;
      });
      await db.transaction((trx) => trx('items').insert({ id: 'next' }));
      assert.deepEqual(await db('items').select('id'), [{ id: 'next' }], 'nothing of the failed transactions, and no transaction left open');
    } finally {
      other.client.releaseConnection(holder);
      await other.destroy();
    }
  });

  it('only a transaction of a wrapped connection takes rides', async () => {
    assert.equal(await rideWithCommit(db as never, ['SELECT 1']), false, 'a handle is no transaction');
    assert.throws(() => sqlString('a\u0000b'), /NUL/);
    assert.equal(sqlString(`it's ''x''`), `'it''s ''''x'''''`);
  });
});
