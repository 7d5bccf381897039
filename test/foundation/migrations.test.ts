/** Migrations run forward, all the way back, and forward again on a scratch database. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDatabase } from '../../src/db';
import { parseConfig } from '../../src/config';

test('latest → rollback all → latest leaves the same schema', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-mig-'));
  const db = openDatabase(parseConfig({ dataDir: dir }));
  const schema = async () =>
    (await db.raw("select type, name, sql from sqlite_master where name not like 'knex_%' and name not like 'sqlite_%' order by name")) as Array<{ name: string }>;
  try {
    await db.migrate.latest();
    const first = await schema();
    assert.ok(first.some((r) => r.name === 'messages'));
    await db.migrate.rollback(undefined, true);
    assert.deepEqual(await schema(), [], 'rollback all must drop every table and index');
    await db.migrate.latest();
    assert.deepEqual(await schema(), first);
    const pragmas = await db.raw('PRAGMA journal_mode');
    assert.equal(pragmas[0].journal_mode, 'wal');
    assert.equal((await db.raw('PRAGMA foreign_keys'))[0].foreign_keys, 1);
  } finally {
    await db.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
