// Rows kept by the writer go out as multi-row statements whose text is built once: the values read back as given
// (text, numbers, booleans, bytes, null), and a value left undefined is written as the query builder writes it.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../src/config';
import { openDatabase, type Db } from '../../src/db';
import { insertRows } from '../../src/db/buffer';
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
});
