// Every transaction on a handle that writes begins IMMEDIATE (src/db/index.ts): a transaction that reads first
// and writes later must not fail because another handle committed in between (WAL mode answers SQLITE_BUSY at
// once there, without waiting). With the lock taken at BEGIN, the other handle waits for it instead.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../src/config';
import { openDatabase, type Db } from '../../src/db';

describe('transactions on a writing handle', () => {
  let dir: string;
  let server: Db;
  let tool: Db;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-immediate-'));
    const config = parseConfig({ dataDir: dir });
    server = openDatabase(config, undefined, { syncBeside: true });
    tool = openDatabase(config); // as a CLI command opens it
    await server.schema.createTable('t', (t) => t.string('x'));
  });
  after(async () => {
    await server.destroy();
    await tool.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a transaction that reads, then writes, is not failed by another handle\'s commit in between: that one waits', async () => {
    let other: Promise<unknown> | undefined;
    await tool.transaction(async (trx) => {
      await trx('t').select();
      other = Promise.resolve(server('t').insert({ x: 'server' }));
      await new Promise((resolve) => setTimeout(resolve, 100));
      await trx('t').insert({ x: 'tool' });
    });
    await other;
    const rows = await server.raw('SELECT x FROM t ORDER BY rowid') as Array<{ x: string }>;
    assert.deepEqual(rows.map((r) => r.x), ['tool', 'server']);
  });
});
