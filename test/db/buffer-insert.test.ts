// Rows kept by the writer go out as multi-row statements whose text is built once: the values read back as given
// (text, numbers, booleans, bytes, null), and a value left undefined is written as the query builder writes it.
// On SQLite, bound rows whose values JSON carries exactly go as one JSON value (src/db/json-rows.ts): stored exactly
// as bound values are, type and bytes, for every column affinity; rows that ride with the COMMIT go as a VALUES list,
// blobs as hex within a budget (src/db/sql-values.ts), stored as bound values are but for the same one difference.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../src/config';
import { openDatabase, type Db } from '../../src/db';
import { addToCounters, insertRows } from '../../src/db/buffer';
import { jsonTuples } from '../../src/db/json-rows';
import { Writer } from '../../src/db/writer';

describe('buffered inserts', () => {
  let dir: string;
  let db: Db;
  let writer: Writer;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-buffer-'));
    db = openDatabase(parseConfig({ dataDir: dir }));
    await db.schema.createTable('things', (t) => {
      t.string('id').primary();
      t.integer('n');
      t.boolean('flag');
      t.binary('raw');
      t.string('note');
      t.string('kind').notNullable().defaultTo('plain');
    });
    writer = new Writer(db, { maxWeight: 1000, windowMs: 0 });
  });
  after(async () => {
    await db.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('rows of one shape are one statement and read back as given', async () => {
    const rows = Array.from({ length: 30 }, (_, i) => ({ id: `t${i}`, n: i, flag: i % 2 === 0, raw: Buffer.from([i, 255, 0]), note: i % 3 ? `note ${i}` : null, kind: 'x' }));
    const statements: string[] = [];
    const count = (q: { sql: string }) => statements.push(q.sql);
    db.on('query', count);
    await Promise.all([writer.run((trx) => insertRows(trx, 'things', rows.slice(0, 10))), writer.run((trx) => insertRows(trx, 'things', rows.slice(10)))]);
    db.off('query', count);
    assert.equal(statements.filter((s) => /^insert/i.test(s)).length, 1, statements.join('\n'));
    const back = await db('things').where('id', 'like', 't%').orderBy('n');
    assert.deepEqual(back.map((r) => ({ ...r, flag: Boolean(r.flag) })), rows);
  });

  it('a value left undefined is written as the query builder writes it (a nullable column without default: null)', async () => {
    await writer.run((trx) => insertRows(trx, 'things', [{ id: 'u1', n: 1, note: undefined }, { id: 'u2', n: 2, note: undefined }]));
    const back = await db('things').whereIn('id', ['u1', 'u2']).orderBy('id').select('id', 'note', 'kind');
    assert.deepEqual(back, [{ id: 'u1', note: null, kind: 'plain' }, { id: 'u2', note: null, kind: 'plain' }]);
  });

  it('rows sent as one JSON value are stored exactly as bound values are, in every column affinity', async () => {
    await db.raw('CREATE TABLE affinities (seq INTEGER, t TEXT, i INTEGER, r REAL, n NUMERIC, b BLOB)');
    const values: unknown[] = [
      'text', '', 'é 😀 中', `it's "quoted" \\ back\\slash`, 'line\nbreak\ttab\u0001', '42', '1.5', 'true',
      0, -1, 7, 2 ** 31, 2 ** 53 - 1, -(2 ** 40), -0, true, false, null, '{"a":1}', '[1,2]', 'null', 'nul \u0000 byte',
    ];
    const columns = ['seq', 't', 'i', 'r', 'n', 'b'];
    const rowsOf = (offset: number) => values.map((v, k) => ({ seq: offset + k, t: v, i: v, r: v, n: v, b: v }));
    const statements: string[] = [];
    const count = (q: { sql: string }) => statements.push(q.sql);
    db.on('query', count);
    await insertRows(db, 'affinities', rowsOf(0)); // outside a writer: written at once
    db.off('query', count);
    assert.ok(/json_each/.test(statements.join('\n')), 'every value here is one JSON carries exactly');
    const bound = rowsOf(1000);
    const tuple = `(${columns.map(() => '?').join(', ')})`;
    await db.raw(`INSERT INTO affinities (${columns.join(', ')}) VALUES ${bound.map(() => tuple).join(', ')}`, bound.flatMap((r) => columns.map((c) => (r as Record<string, unknown>)[c])) as never[]);
    const stored = async (from: number) => (await db.raw(
      `SELECT ${columns.slice(1).map((c) => `typeof(${c}) || ':' || quote(${c}) AS ${c}`).join(', ')} FROM affinities WHERE seq >= ? AND seq < ? ORDER BY seq`,
      [from, from + values.length],
    )) as unknown[];
    const viaJson = (await stored(0)) as Array<Record<string, string>>;
    const viaBinding = (await stored(1000)) as Array<Record<string, string>>;
    // inside a writer transaction the rows ride with the COMMIT; a string with a NUL among them (which a VALUES
    // literal cannot hold) keeps them in this JSON form, written into the statement's text (the VALUES form is
    // compared for every affinity in the next test)
    const ridden: Array<{ sql: string }> = [];
    const rides = (q: { ridesWithCommit?: boolean; sql: string }) => q.ridesWithCommit && ridden.push(q);
    db.on('query', rides);
    await writer.run((trx) => insertRows(trx, 'affinities', rowsOf(2000)));
    db.off('query', rides);
    assert.equal(ridden.length, 1, 'the rows rode with the COMMIT');
    assert.match(ridden[0].sql, /json_each\('/, 'as a JSON literal');
    assert.deepEqual(await stored(2000), viaJson, 'as a literal riding with the COMMIT (src/db/commit-batch.ts)');
    assert.equal(viaJson.length, values.length, 'every row inserted, in order');
    values.forEach((v, k) => {
      const wide = Number.isSafeInteger(v) && ((v as number) | 0) !== v;
      if (!wide) return assert.deepEqual(viaJson[k], viaBinding[k], String(v));
      // The one difference: the driver binds an integer beyond 32 bits as a float, which a TEXT or untyped column
      // keeps as such ('2147483648.0'); JSON keeps the integer. No hot table puts numbers in such a column.
      assert.deepEqual({ ...viaJson[k], t: undefined, b: undefined }, { ...viaBinding[k], t: undefined, b: undefined }, String(v));
      assert.equal(viaJson[k].b, `integer:${v}`);
    });
  });

  it('rows with a few bytes ride as a VALUES list with hex blobs, stored exactly as bound values are', async () => {
    await db.raw('CREATE TABLE blob_affinities (seq INTEGER, raw BLOB, t TEXT, i INTEGER, r REAL, n NUMERIC, b BLOB)');
    const values: unknown[] = [
      'text', '', 'é 😀 中', `it's "quoted" \\ back\\slash`, 'line\nbreak\ttab\u0001', '42', '1.5', 'X\'00\'',
      0, -1, 7, 2 ** 31, 2 ** 53 - 1, -(2 ** 40), -0, true, false, null, Buffer.from([0, 39, 255]), Buffer.alloc(0),
    ];
    const columns = ['seq', 'raw', 't', 'i', 'r', 'n', 'b'];
    const rowsOf = (offset: number) => values.map((v, k) => ({ seq: offset + k, raw: Buffer.from([k, 0, 255]), t: v, i: v, r: v, n: v, b: v }));
    const bound = rowsOf(1000);
    const tuple = `(${columns.map(() => '?').join(', ')})`;
    await db.raw(`INSERT INTO blob_affinities (${columns.join(', ')}) VALUES ${bound.map(() => tuple).join(', ')}`, bound.flatMap((r) => columns.map((c) => (r as Record<string, unknown>)[c])) as never[]);
    const ridden: string[] = [];
    const rides = (q: { ridesWithCommit?: boolean; sql: string }) => q.ridesWithCommit && ridden.push(q.sql);
    db.on('query', rides);
    await writer.run((trx) => insertRows(trx, 'blob_affinities', rowsOf(0)));
    db.off('query', rides);
    assert.equal(ridden.length, 1, 'the rows rode with the COMMIT');
    assert.match(ridden[0], /^INSERT INTO "blob_affinities" .* VALUES \(0, X'0000ff', 'text', /);
    const stored = async (from: number) => (await db.raw(
      `SELECT ${columns.slice(1).map((c) => `typeof(${c}) || ':' || quote(${c}) AS ${c}`).join(', ')} FROM blob_affinities WHERE seq >= ? AND seq < ? ORDER BY seq`,
      [from, from + values.length],
    )) as Array<Record<string, string>>;
    const viaText = await stored(0);
    const viaBinding = await stored(1000);
    assert.equal(viaText.length, values.length, 'every row inserted, in order');
    values.forEach((v, k) => {
      const wide = Number.isSafeInteger(v) && ((v as number) | 0) !== v;
      if (!wide) return assert.deepEqual(viaText[k], viaBinding[k], String(v));
      // as with JSON (above): the driver binds an integer beyond 32 bits as a float, the text keeps the integer
      assert.deepEqual({ ...viaText[k], t: undefined, b: undefined }, { ...viaBinding[k], t: undefined, b: undefined }, String(v));
    });

    // a NUL in a string (a literal cannot hold one) or a lone surrogate sends the rows the bound way
    for (const [seq, odd] of [[3000, 'nul \u0000 byte'], [3001, 'lone \ud800']] as const) {
      ridden.splice(0);
      db.on('query', rides);
      await writer.run((trx) => insertRows(trx, 'blob_affinities', [{ seq, raw: Buffer.from([1]), t: odd, i: 1, r: 1, n: 1, b: null }]));
      db.off('query', rides);
      assert.deepEqual(ridden.filter((sql) => sql.includes('blob_affinities')), [], String(odd));
      const [row] = await db('blob_affinities').where({ seq }).select('t');
      assert.equal(Buffer.from(row.t).toString('hex'), Buffer.from(odd.replace('\ud800', '\ufffd')).toString('hex'), 'as the driver binds it');
    }
  });

  it('the writer\'s rows ride as one VALUES list, or one JSON value when a string holds a NUL; rows keep their order whatever their columns are called', async () => {
    await db.schema.createTable('keyed', (t) => {
      t.string('key');
      t.string('true');
      t.integer('n');
    });
    const statements: string[] = [];
    const count = (q: { sql: string; ridesWithCommit?: boolean }) => q.ridesWithCommit && statements.push(q.sql);
    db.on('query', count);
    await writer.run((trx) => insertRows(trx, 'keyed', [{ key: 'z', true: 'x', n: 1 }, { key: 'a', true: null, n: 2 }, { key: 'm', true: 'y', n: 3 }]));
    const inserts = () => statements.filter((sql) => /insert/i.test(sql)); // those that rode with the COMMIT
    assert.deepEqual(inserts().map((sql) => /^INSERT INTO "keyed" \("key", "true", "n"\) VALUES \('z', 'x', 1\), /.test(sql)), [true], statements.join('\n'));
    statements.splice(0);
    await writer.run((trx) => insertRows(trx, 'keyed', [{ key: 'n\u0000ul', true: 'x', n: 4 }]));
    db.off('query', count);
    assert.deepEqual(inserts().map((sql) => /json_each\('/.test(sql)), [true], statements.join('\n')); // the literal, not bound
    const back = await db.raw('SELECT key, n FROM keyed ORDER BY rowid') as Array<{ key: string; n: number }>;
    assert.deepEqual(back.map((r) => r.n), [1, 2, 3, 4], 'the rows\' order, not their key column\'s');
    assert.equal(back[3].key, 'n\u0000ul');
  });

  it('a value JSON would carry differently sends its chunk the bound way', async () => {
    // fractions: SQLite's text-to-double is not correctly rounded (0.833008434658218 came back a unit off)
    for (const odd of ['lone \ud800 surrogate', 1.5, 0.833008434658218, 1e300, 2 ** 53, Number.NaN, Number.POSITIVE_INFINITY, Buffer.from('x'), undefined, { a: 1 }, 10n]) {
      assert.equal(jsonTuples([['a', 'fine'], ['b', odd]]), undefined, String(odd));
    }
    await writer.run((trx) => insertRows(trx, 'things', [{ id: 'o1', note: 'lone \ud800 surrogate', n: 0.833008434658218 }]));
    const back = await db('things').where({ id: 'o1' }).first();
    assert.equal(Buffer.from(back.note).toString('hex'), Buffer.from('lone \ufffd surrogate').toString('hex'), 'as the driver binds it');
    assert.equal(back.n, 0.833008434658218);
  });

  it('counter additions go as one JSON value on SQLite and add up as bound ones do; a key JSON would change is bound', async () => {
    await db.schema.createTable('tallies', (t) => {
      t.string('name');
      t.integer('day');
      t.integer('sent');
      t.integer('bytes');
      t.primary(['name', 'day']);
    });
    const statements: string[] = [];
    const count = (q: { sql: string }) => statements.push(q.sql);
    db.on('query', count);
    const add = (rows: Array<Record<string, unknown>>) => addToCounters(db, 'tallies', ['name', 'day'], rows, ['sent', 'bytes']);
    await add([{ name: 'a', day: 1, sent: 2, bytes: 10 }, { name: 'b', day: 1, sent: 1 }]);
    await add([{ name: 'a', day: 1, sent: 3, bytes: 5 }, { name: 'a', day: 2, sent: 1, bytes: 1 }]);
    await add([{ name: 'lone \ud800', day: 1, sent: 4, bytes: 4 }]);
    db.off('query', count);
    assert.deepEqual(statements.map((sql) => /json_each/.test(sql)), [true, true, false]);
    const back = await db('tallies').orderBy(['name', 'day']).select('name', 'day', 'sent', 'bytes');
    assert.deepEqual(back, [
      { name: 'a', day: 1, sent: 5, bytes: 15 }, { name: 'a', day: 2, sent: 1, bytes: 1 }, { name: 'b', day: 1, sent: 1, bytes: 0 },
      { name: 'lone \ufffd', day: 1, sent: 4, bytes: 4 },
    ]);
  });
});
