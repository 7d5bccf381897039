// Prepared statements kept per SQLite connection: a statement seen before is not prepared again, each run binds
// its own values, errors reach their caller, a kept SELECT never holds the WAL back, and a connection with kept
// statements still closes.
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sqlite3 from 'sqlite3';
import { parseConfig } from '../../src/config';
import { openDatabase, sqliteKnex, type Db } from '../../src/db';
import { cacheStatements, MAX_STATEMENTS, type SqliteConnection } from '../../src/db/statement-cache';

type Conn = sqlite3.Database & SqliteConnection;

function call(conn: Conn, method: 'all' | 'run', sql: string, params: unknown[] = []): Promise<unknown> {
  return new Promise((resolve, reject) => conn[method](sql, params, function (this: unknown, err: Error | null, rows?: unknown) {
    if (err) reject(err);
    else resolve(method === 'run' ? { changes: (this as { changes: number }).changes } : rows);
  }));
}

describe('prepared statements kept per connection', () => {
  let dir: string;
  let conn: Conn;
  let prepared: string[];

  /** The driver's constructor, counting what it prepares. */
  const DriverStatement = sqlite3.Statement as unknown as new (db: sqlite3.Database, sql: string, cb: (err: Error | null) => void) => object;
  class CountingStatement extends DriverStatement {
    constructor(db: sqlite3.Database, sql: string, cb: (err: Error | null) => void) {
      prepared.push(sql);
      super(db, sql, cb);
    }
  }

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-stmt-'));
    prepared = [];
    conn = new sqlite3.Database(path.join(dir, 'db.sqlite')) as Conn;
    cacheStatements(conn, CountingStatement as never);
    await new Promise<void>((resolve, reject) => conn.exec('PRAGMA journal_mode = WAL; CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)', (e) => (e ? reject(e) : resolve())));
  });
  afterEach(async () => {
    await new Promise<void>((resolve) => conn.close(() => resolve()));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a statement run again is not prepared again, and each run binds its own values', async () => {
    const insert = 'INSERT INTO t (id, name) VALUES (?, ?)';
    for (let i = 1; i <= 5; i++) assert.deepEqual(await call(conn, 'run', insert, [i, `n${i}`]), { changes: 1 });
    const select = 'SELECT name FROM t WHERE id IN (?, ?) ORDER BY id';
    assert.deepEqual(await call(conn, 'all', select, [1, 4]), [{ name: 'n1' }, { name: 'n4' }]);
    assert.deepEqual(await call(conn, 'all', select, [2, 5]), [{ name: 'n2' }, { name: 'n5' }]);
    assert.deepEqual(prepared, [insert, select]);
  });

  it('the same statement asked for twice at once answers both, in order', async () => {
    const insert = 'INSERT INTO t (id, name) VALUES (?, ?)';
    await Promise.all([call(conn, 'run', insert, [1, 'a']), call(conn, 'run', insert, [2, 'b']), call(conn, 'run', insert, [3, 'c'])]);
    assert.deepEqual(await call(conn, 'all', 'SELECT id, name FROM t ORDER BY id'), [{ id: 1, name: 'a' }, { id: 2, name: 'b' }, { id: 3, name: 'c' }]);
  });

  it('a statement that does not prepare fails its caller and is not kept; a kept one that fails once still works', async () => {
    await assert.rejects(call(conn, 'all', 'SELEC nonsense'), /syntax error/);
    await assert.rejects(call(conn, 'all', 'SELEC nonsense'), /syntax error/);
    const insert = 'INSERT INTO t (id, name) VALUES (?, ?)';
    await call(conn, 'run', insert, [1, 'a']);
    await assert.rejects(call(conn, 'run', insert, [2, 'a']), /UNIQUE constraint failed/);
    await call(conn, 'run', insert, [2, 'b']);
    assert.deepEqual(await call(conn, 'all', 'SELECT count(*) AS n FROM t'), [{ n: 2 }]);
    assert.equal(prepared.filter((s) => s === insert).length, 1);
  });

  it('keeps at most MAX_STATEMENTS, and a connection with kept statements closes', async () => {
    for (let i = 0; i < MAX_STATEMENTS + 20; i++) await call(conn, 'all', `SELECT ${i} AS n`);
    // the first ones were finalized: asking again prepares them again
    await call(conn, 'all', 'SELECT 0 AS n');
    await call(conn, 'all', `SELECT ${MAX_STATEMENTS + 19} AS n`);
    assert.equal(prepared.filter((s) => s === 'SELECT 0 AS n').length, 2);
    assert.equal(prepared.filter((s) => s === `SELECT ${MAX_STATEMENTS + 19} AS n`).length, 1);
    // afterEach closes: SQLite would refuse (SQLITE_BUSY) with a statement left unfinalized
  });

  it('keeps a bounded amount of SQL, however long the texts: a prepared multi-row statement costs ~60 bytes a character', async () => {
    const finalized = new Set<string>();
    const original = (DriverStatement.prototype as unknown as { finalize(cb?: () => void): unknown }).finalize;
    const live = () => prepared.filter((s) => !finalized.has(s));
    (CountingStatement.prototype as unknown as { finalize(cb?: () => void): unknown }).finalize = function (this: { sql: string }, cb?: () => void) {
      finalized.add(this.sql);
      return original.call(this, cb);
    };
    // request-controlled list lengths: each length is its own text, ~18 KB each here
    for (let n = 6000; n < 6000 + 60; n++) {
      const sql = `SELECT id FROM t WHERE name IN (${new Array(n).fill('?').join(', ')})`;
      await call(conn, 'all', sql, new Array(n).fill('x'));
    }
    const keptChars = live().reduce((sum, s) => sum + s.length, 0);
    assert.ok(keptChars <= 512 * 1024, `${keptChars} characters of SQL kept prepared`);
  });

  it('a statement run without values does not reuse the values of its previous run', async () => {
    const select = 'SELECT ? AS v';
    assert.deepEqual(await call(conn, 'all', select, ['secret of another account']), [{ v: 'secret of another account' }]);
    assert.deepEqual(await call(conn, 'all', select, []), [{ v: null }]);
  });
});

describe('kept statements on the app database', () => {
  let dir: string;
  let db: Db;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-stmt-app-'));
  });
  afterEach(async () => {
    await db.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a kept SELECT on a reader does not hold a snapshot: a checkpoint copies the whole WAL after it', async () => {
    db = openDatabase(parseConfig({ dataDir: dir }), undefined, { autoCheckpoint: false });
    await db.schema.createTable('items', (t) => t.integer('n').primary());
    const reader = sqliteKnex(path.join(dir, 'pigeon.sqlite'), 1, 'PRAGMA query_only = ON;');
    try {
      for (let i = 0; i < 3; i++) {
        await db('items').insert({ n: i });
        assert.equal((await reader('items').count({ c: '*' }))[0].c, i + 1); // the same text each time: one kept statement
      }
      await db('items').insert({ n: 99 });
      const [result] = await db.raw('PRAGMA wal_checkpoint(TRUNCATE)');
      assert.deepEqual(result, { busy: 0, log: 0, checkpointed: 0 });
    } finally {
      await reader.destroy();
    }
  });

  it('a database closes and opens again with its statements kept', async () => {
    db = openDatabase(parseConfig({ dataDir: dir }));
    await db.schema.createTable('items', (t) => t.integer('n').primary());
    for (let i = 0; i < 3; i++) await db('items').insert({ n: i });
    await db.destroy();
    db = openDatabase(parseConfig({ dataDir: dir }));
    assert.deepEqual(await db('items').orderBy('n').pluck('n'), [0, 1, 2]);
  });
});
