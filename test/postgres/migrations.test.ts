/** The same migrations on PostgreSQL: forward, all the way back, and forward again on a fresh database. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDatabase, rawRows } from '../../src/db';
import { parseConfig } from '../../src/config';
import { databaseFor, testPostgresAdminUrl } from '../support/postgres';

test('latest → rollback all → latest leaves the same schema on PostgreSQL', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-pgmig-'));
  const url = databaseFor(await testPostgresAdminUrl(), dir);
  const db = openDatabase(parseConfig({ dataDir: dir, database: { client: 'postgres', url } }));
  const schema = async () => rawRows<{ table_name: string; column_name: string; data_type: string }>(await db.raw(
    "SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = 'public' AND table_name NOT LIKE 'knex_%' ORDER BY table_name, column_name"));
  const indexes = async () => rawRows<{ indexname: string }>(await db.raw("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename NOT LIKE 'knex_%' ORDER BY indexname"));
  try {
    await db.migrate.latest();
    const first = await schema();
    const firstIndexes = await indexes();
    assert.ok(first.some((r) => r.table_name === 'messages' && r.column_name === 'lease_owner'));
    assert.equal(first.find((r) => r.table_name === 'messages' && r.column_name === 'created_at')?.data_type, 'bigint', 'ms times need 64 bits');
    await db.migrate.rollback(undefined, true);
    assert.deepEqual(await schema(), [], 'rollback all must drop every table');
    assert.deepEqual(await indexes(), [], 'and every index');
    await db.migrate.latest();
    assert.deepEqual(await schema(), first);
    assert.deepEqual(await indexes(), firstIndexes);
  } finally {
    await db.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
