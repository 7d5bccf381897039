// The webhooks migration's down() removes exactly what its up() added, and up() runs again after it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../src/config';
import { migrateLatest, openDatabase } from '../../src/db';

const NAME = '20261121040001_webhooks.js';
const TABLES = ['webhooks', 'webhook_deliveries', 'webhook_attempts'];

test('webhooks migration: latest, down, up again', async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-migrate-'));
  const db = openDatabase(parseConfig({ dataDir }));
  const tables = async () => (await db('sqlite_master').where({ type: 'table' }).pluck('name')) as string[];
  const indexes = async () => (await db('sqlite_master').where({ type: 'index' }).where('name', 'like', 'webhook%').pluck('name')) as string[];
  try {
    await migrateLatest(db);
    const before = await tables();
    for (const t of TABLES) assert.ok(before.includes(t), t);
    assert.ok((await indexes()).includes('webhook_deliveries_due_idx'));

    await db.migrate.down({ name: NAME });
    const after = await tables();
    assert.deepEqual(after.sort(), before.filter((t) => !TABLES.includes(t)).sort());
    assert.deepEqual(await indexes(), []);

    await db.migrate.up({ name: NAME });
    assert.deepEqual((await tables()).sort(), before.sort());
  } finally {
    await db.destroy();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
