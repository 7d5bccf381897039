// The domains migration can be rolled back and applied again on a scratch database.
import { it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../src/config';
import { migrateLatest, openDatabase } from '../../src/db';

it('migrations: latest → rollback all → latest leaves the domain tables in place', async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-migrate-'));
  const db = openDatabase(parseConfig({ dataDir }));
  try {
    await migrateLatest(db);
    assert.ok(await db.schema.hasTable('domain_keys'));
    await db.migrate.rollback(undefined, true);
    for (const table of ['domain_keys', 'domain_record_checks', 'domain_events', 'domains']) assert.equal(await db.schema.hasTable(table), false, table);
    await migrateLatest(db);
    for (const table of ['domain_keys', 'domain_record_checks', 'domain_events']) assert.ok(await db.schema.hasTable(table), table);
    const indexes = await db.raw("select name from sqlite_master where type = 'index' and name = 'domains_recheck_idx'");
    assert.equal(indexes.length, 1);
  } finally {
    await db.destroy();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
