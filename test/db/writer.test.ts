// The shared writer: work handed to it in one turn commits together, each caller hears of its own work only
// after the commit that holds it, a failure fails only the work that caused it, and readers see what committed.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../src/config';
import { openDatabase, type Db } from '../../src/db';
import { addToCounters, insertRows } from '../../src/db/buffer';
import { Writer, type BatchKind } from '../../src/db/writer';
import { whenDurable } from '../../src/db/durable-hooks';
import type { WalSync } from '../../src/db/wal-sync';

describe('the batched writer', () => {
  let dir: string;
  let db: Db;
  let reader: Db;
  let commits: Array<{ pieces: number; weight: number }>;
  let writer: Writer;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-writer-'));
    const config = parseConfig({ dataDir: dir });
    db = openDatabase(config);
    reader = openDatabase(config);
    await db.schema.createTable('items', (t) => {
      t.string('id').primary();
      t.integer('n');
    });
    await db.schema.createTable('tallies', (t) => {
      t.string('name').primary();
      t.integer('n').notNullable().defaultTo(0);
    });
    commits = [];
    writer = new Writer(db, { maxWeight: 1000, windowMs: 0, onCommit: (pieces, weight) => commits.push({ pieces, weight }) });
  });
  after(async () => {
    await db.destroy();
    await reader.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const insert = (id: string, n = 1) => writer.run((trx) => insertRows(trx, 'items', [{ id, n }]));

  it('work handed over in one turn commits in one transaction, its rows in one statement', async () => {
    commits.length = 0;
    const statements: string[] = [];
    const count = (q: { sql: string }) => statements.push(q.sql);
    db.on('query', count);
    await Promise.all(Array.from({ length: 50 }, (_, i) => insert(`a${i}`)));
    db.off('query', count);
    assert.deepEqual(commits, [{ pieces: 50, weight: 50 }]);
    assert.equal(statements.filter((s) => /insert/i.test(s)).length, 1, statements.join('\n'));
    assert.equal(Number((await reader('items').where('id', 'like', 'a%').count({ n: '*' }))[0].n), 50);
  });

  it('a caller is answered only after the commit that holds its work, and a reader then sees it', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let answered = false;
    const slow = writer.run(async (trx) => {
      await insertRows(trx, 'items', [{ id: 'slow', n: 1 }]);
      await gate;
    });
    const neighbour = insert('neighbour').then(() => (answered = true));
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(answered, false, 'no answer while the transaction is open');
    assert.equal(await reader('items').where({ id: 'neighbour' }).first(), undefined, 'nothing visible before the commit');
    release();
    await Promise.all([slow, neighbour]);
    assert.ok(await reader('items').where({ id: 'neighbour' }).first());
    assert.ok(await reader('items').where({ id: 'slow' }).first());
  });

  it('a piece of work that throws fails alone; the others of its group commit', async () => {
    const results = await Promise.allSettled(Array.from({ length: 9 }, (_, i) => writer.run(async (trx) => {
      await insertRows(trx, 'items', [{ id: `b${i}`, n: i }]);
      if (i === 4) throw new Error('bad piece');
      return i;
    })));
    assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
    assert.equal((results[4] as PromiseRejectedResult).reason.message, 'bad piece');
    assert.deepEqual(results.filter((r) => r.status === 'fulfilled').map((r) => (r as PromiseFulfilledResult<number>).value), [0, 1, 2, 3, 5, 6, 7, 8]);
    const ids = (await reader('items').where('id', 'like', 'b%').orderBy('id')).map((r: { id: string }) => r.id);
    assert.deepEqual(ids, ['b0', 'b1', 'b2', 'b3', 'b5', 'b6', 'b7', 'b8']);
  });

  it('a row that fails only when the kept rows are written (a duplicate key) fails only the work that wrote it', async () => {
    await insert('dup');
    const results = await Promise.allSettled(['c1', 'c2', 'dup', 'c3', 'c4'].map((id) => insert(id)));
    assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    assert.equal((await reader('items').whereIn('id', ['c1', 'c2', 'c3', 'c4'])).length, 4);
  });

  it('batch items of one kind reach their handler together, once per transaction, each answered in order', async () => {
    const calls: string[][] = [];
    const setN: BatchKind<{ id: string; n: number }, number> = {
      name: 'set n',
      async run(trx, items) {
        calls.push(items.map((i) => i.id));
        for (const i of items) await trx('items').where({ id: i.id }).update({ n: i.n });
        return items.map((i) => i.n * 10);
      },
    };
    await Promise.all(['f1', 'f2', 'f3'].map((id) => insert(id)));
    calls.length = 0;
    const answers = await Promise.all([writer.batch(setN, { id: 'f1', n: 1 }), insert('f4'), writer.batch(setN, { id: 'f2', n: 2 }), writer.batch(setN, { id: 'f3', n: 3 })]);
    assert.deepEqual(answers, [10, undefined, 20, 30]);
    assert.deepEqual(calls, [['f1', 'f2', 'f3']]);
    assert.deepEqual((await reader('items').whereIn('id', ['f1', 'f2', 'f3']).orderBy('id')).map((r: { n: number }) => r.n), [1, 2, 3]);
  });

  it('a batch whose handler fails on one item is split until that item alone fails; the rest commit', async () => {
    const strict: BatchKind<string, string> = {
      name: 'strict',
      async run(trx, ids) {
        for (const id of ids) if (id === 'g-bad') throw new Error('bad item');
        await insertRows(trx, 'items', ids.map((id) => ({ id, n: 0 })));
        return ids.map((id) => `ok ${id}`);
      },
    };
    const results = await Promise.allSettled(['g1', 'g2', 'g-bad', 'g3', 'g4'].map((id) => writer.batch(strict, id)));
    assert.deepEqual(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)), ['ok g1', 'ok g2', 'bad item', 'ok g3', 'ok g4']);
    assert.deepEqual((await reader('items').where('id', 'like', 'g%').orderBy('id')).map((r: { id: string }) => r.id), ['g1', 'g2', 'g3', 'g4']);
  });

  it('batch items that may gather wait for more only while no plain work is queued', async () => {
    // a gathering wait no test could sit out: each commit below is started by plain work, or the test times out
    const slowKind: BatchKind<string, string> = {
      name: 'gathering',
      gatherMs: 3_600_000,
      async run(trx, ids) {
        await insertRows(trx, 'items', ids.map((id) => ({ id, n: 0 })));
        return ids;
      },
    };
    commits.length = 0;
    let late: Array<Promise<string>> = [];
    const first = Promise.all([
      writer.batch(slowKind, 'h1'),
      writer.run(async (trx) => {
        // queued while this transaction runs: after its commit only gathering items are left, so they wait
        late = [writer.batch(slowKind, 'h2'), writer.batch(slowKind, 'h3')];
        await insertRows(trx, 'items', [{ id: 'h-plain1', n: 0 }]);
      }),
    ]);
    await first;
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(commits.length, 1, 'the late items gather instead of committing at once');
    await Promise.all([insert('h-plain2'), ...late]);
    assert.deepEqual(commits, [{ pieces: 2, weight: 2 }, { pieces: 3, weight: 3 }]);
    assert.equal((await reader('items').where('id', 'like', 'h%')).length, 5);
  });

  it('drained() waits for work already handed over', async () => {
    const pending = Array.from({ length: 5 }, (_, i) => insert(`e${i}`));
    await writer.drained();
    assert.equal((await reader('items').where('id', 'like', 'e%')).length, 5);
    await Promise.all(pending);
  });

  it('a durable hook runs after the WAL sync and before the callers are answered; never for other transactions', async () => {
    let synced!: () => void;
    const sync = new Promise<void>((resolve) => (synced = resolve));
    const walSync = { claimNextCommit: () => undefined, sync: () => sync } as unknown as WalSync;
    const syncing = new Writer(db, { maxWeight: 100, windowMs: 0, walSync });
    const order: string[] = [];
    const answered = syncing.run(async (trx) => {
      assert.equal(whenDurable(trx, (durable) => order.push(`durable ${durable}`)), true);
      await insertRows(trx, 'items', [{ id: 'k1', n: 1 }]);
    }).then(() => order.push('answered'));
    while (!(await reader('items').where({ id: 'k1' }).first())) await new Promise((r) => setImmediate(r));
    assert.deepEqual(order, [], 'committed, not yet synced: nothing told');
    synced();
    await answered;
    assert.deepEqual(order, ['durable true', 'answered']);
    const other: boolean[] = [];
    await db.transaction(async (trx) => assert.equal(whenDurable(trx, (durable) => other.push(durable)), false));
    assert.deepEqual(other, [], 'a transaction no writer runs never tells');
  });

  it('a failed WAL sync tells the hooks false, and the callers get its error', async () => {
    const walSync = { claimNextCommit: () => undefined, sync: () => Promise.reject(new Error('EIO')) } as unknown as WalSync;
    const failing = new Writer(db, { maxWeight: 100, windowMs: 0, walSync });
    const told: boolean[] = [];
    await assert.rejects(failing.run(async (trx) => {
      whenDurable(trx, (durable) => told.push(durable));
      await insertRows(trx, 'items', [{ id: 'k3', n: 1 }]);
    }), /EIO/);
    assert.deepEqual(told, [false]);
  });

  it('a group that fails tells its hooks false; the rerun of the work that did not fail tells its own true', async () => {
    const told: string[] = [];
    const good = writer.run(async (trx) => {
      whenDurable(trx, (durable) => told.push(`good ${durable}`));
      await insertRows(trx, 'items', [{ id: 'k2', n: 1 }]);
    });
    const bad = writer.run(async (trx) => {
      whenDurable(trx, (durable) => told.push(`bad ${durable}`));
      throw new Error('fails');
    });
    await good;
    await assert.rejects(bad, /fails/);
    assert.deepEqual(told, ['good false', 'bad false', 'good true', 'bad false']);
  });

  describe('with counterFlushMs (counters summed across transactions)', () => {
    const tally = (w: Writer, name: string, n: number, fail = false) => w.run(async (trx) => {
      await addToCounters(trx, 'tallies', ['name'], [{ name, n }], ['n']);
      if (fail) throw new Error('rolled back');
    });
    const read = async (name: string) => Number((await reader('tallies').where({ name }).first())?.n ?? 0);

    it('keeps the counts of committed transactions in memory, writes them as one upsert per row on flushCounters(), and never counts rolled-back work', async () => {
      const summing = new Writer(db, { maxWeight: 1000, windowMs: 0, counterFlushMs: 60_000 });
      const statements: string[] = [];
      const count = (q: { sql: string }) => statements.push(q.sql);
      for (let i = 0; i < 5; i++) await tally(summing, 'sent', 2); // five transactions, one after another
      await assert.rejects(tally(summing, 'sent', 100, true), /rolled back/);
      assert.equal(await read('sent'), 0, 'nothing written before the flush');
      db.on('query', count);
      await summing.flushCounters();
      db.off('query', count);
      assert.equal(await read('sent'), 10);
      assert.equal(statements.filter((s) => /insert into tallies/i.test(s)).length, 1, statements.join('\n'));
      await summing.flushCounters(); // nothing kept: no transaction at all
      assert.equal(await read('sent'), 10);
      await summing.close();
    });

    it('close() writes what is kept, so a clean stop loses no counts', async () => {
      const summing = new Writer(db, { maxWeight: 1000, windowMs: 0, counterFlushMs: 60_000 });
      await Promise.all([tally(summing, 'closed', 3), tally(summing, 'closed', 4)]);
      assert.equal(await read('closed'), 0);
      await summing.close();
      assert.equal(await read('closed'), 7);
    });

    it('a flush that fails keeps the counts and adds them to the next one', async () => {
      const summing = new Writer(db, { maxWeight: 1000, windowMs: 0, counterFlushMs: 60_000 });
      await tally(summing, 'retried', 5);
      await db.schema.renameTable('tallies', 'tallies_away'); // the flush's upsert fails: no such table
      await summing.flushCounters();
      await db.schema.renameTable('tallies_away', 'tallies');
      assert.equal(await read('retried'), 0);
      await tally(summing, 'retried', 1);
      await summing.flushCounters();
      assert.equal(await read('retried'), 6);
      await summing.close();
    });

    it('a flush that shares its transaction with work that fails is written when the group is split (bisect reruns it)', async () => {
      const summing = new Writer(db, { maxWeight: 1000, windowMs: 0, counterFlushMs: 60_000 });
      await tally(summing, 'shared', 4);
      // Both handed over in one turn: one transaction, rolled back by the failing work, then split in halves.
      const flushed = summing.flushCounters();
      const failing = summing.run(async () => {
        throw new Error('fails its group');
      });
      await assert.rejects(failing, /fails its group/);
      await flushed;
      assert.equal(await read('shared'), 4);
      await summing.close();
      assert.equal(await read('shared'), 4, 'not written twice either');
    });
  });
});
