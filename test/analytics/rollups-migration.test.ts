// The migration that makes one rollup table of two keeps every counter: up moves the totals' rows to
// recipient_domain '' and the breakdown's as they are, down splits them back. On SQLite and PostgreSQL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../src/config';
import { migrateLatest, openDatabase } from '../../src/db';
import { onPostgres, testConfig } from '../support/app';
import { testPostgresAdminUrl } from '../support/postgres';

const NAME = '20261125010001_analytics_rollups.js';
const KEY = { account_id: 'acc_1', mode: 'live', tag: '', grain: 'd', bucket: 86_400_000, sending_domain: 'example.com', ip_pool: 'default' };

test('analytics rollups migration: two tables into one and back, every counter kept', async () => {
  if (onPostgres) await testPostgresAdminUrl();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-migrate-'));
  const db = openDatabase(parseConfig(testConfig(dataDir)));
  const sorted = (rows: Array<Record<string, unknown>>) =>
    rows.map((r) => ({ ...r, bucket: Number(r.bucket) })).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  try {
    await migrateLatest(db);
    await db.migrate.down({ name: NAME });
    assert.equal(await db.schema.hasTable('analytics_rollups'), false);
    await db('accounts').insert({ id: 'acc_1', name: 'one', created_at: 0 });
    // one row a statement: a multi-row insert would bind NULL for the columns a row leaves out
    await db('analytics_totals').insert({ ...KEY, sent: 5, delivered: 4 });
    await db('analytics_totals').insert({ ...KEY, tag: 'news', sent: 2 });
    await db('analytics_domains').insert({ ...KEY, recipient_domain: 'a.test', sent: 3, delivered: 3 });
    await db('analytics_domains').insert({ ...KEY, grain: 'm', bucket: 0, recipient_domain: 'b.test', sent: 2, bounced_hard: 1 });
    const totals = await db('analytics_totals').select();
    const domains = await db('analytics_domains').select();

    await db.migrate.up({ name: NAME });
    assert.equal(await db.schema.hasTable('analytics_totals'), false);
    assert.equal(await db.schema.hasTable('analytics_domains'), false);
    const rollups = await db('analytics_rollups').select();
    assert.deepEqual(sorted(rollups.filter((r) => r.recipient_domain === '').map(({ recipient_domain: _, ...r }) => r)), sorted(totals));
    assert.deepEqual(sorted(rollups.filter((r) => r.recipient_domain !== '')), sorted(domains));
    assert.equal(rollups.length, 4);

    await db.migrate.down({ name: NAME });
    assert.deepEqual(sorted(await db('analytics_totals').select()), sorted(totals));
    assert.deepEqual(sorted(await db('analytics_domains').select()), sorted(domains));
    await db.migrate.up({ name: NAME });
    assert.equal(Number((await db('analytics_rollups').count({ n: '*' }))[0].n), 4);
  } finally {
    await db.destroy();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
