// Commits made durable beside the writer (src/db/wal-sync.ts): under synchronous=FULL the writer's connection runs
// NORMAL, and a transaction's callers are answered only once a sync of the WAL that began after their COMMIT has
// finished, while the writer commits the next group; outcomes (answerBeforeSync) are answered at their commit.
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../src/config';
import { databaseFile, openDatabase, type Db } from '../../src/db';
import { insertRows } from '../../src/db/buffer';
import { WalSync } from '../../src/db/wal-sync';
import { Writer, type BatchKind } from '../../src/db/writer';

describe('commits made durable beside the writer', () => {
  let dir: string;
  let db: Db;
  let reader: Db;
  let writer: Writer;
  let log: string[];
  let gate: Promise<void>;
  let open: () => void;
  let failNext: boolean;

  /** fdatasync of the real WAL file, held until the test opens the gate */
  const heldSync = async (fd: number) => {
    log.push('sync asked');
    await gate;
    if (failNext) {
      failNext = false;
      throw new Error('EIO: the disk said no');
    }
    await new Promise<void>((resolve, reject) => fs.fdatasync(fd, (err) => (err ? reject(err) : resolve())));
    log.push('sync done');
  };
  const hold = () => (gate = new Promise<void>((resolve) => (open = resolve)));

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-walsync-'));
    const config = parseConfig({ dataDir: dir });
    db = openDatabase(config, undefined, { syncBeside: true });
    reader = openDatabase(config);
    await db.schema.createTable('items', (t) => t.string('id').primary());
    log = [];
    failNext = false;
    hold();
    writer = new Writer(db, { maxWeight: 100, windowMs: 0, walSync: new WalSync(`${databaseFile(config)}-wal`, heldSync) });
  });
  afterEach(async () => {
    open();
    await writer.close();
    await db.destroy();
    await reader.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const insert = (id: string) => writer.run((trx) => insertRows(trx, 'items', [{ id }])).then(() => log.push(`answered ${id}`));
  const visible = async (id: string) => Boolean(await reader('items').where({ id }).first());
  const until = async (cond: () => boolean | Promise<boolean>) => {
    while (!(await cond())) await new Promise((resolve) => setTimeout(resolve, 1));
  };

  it('the writer connection leaves the sync to the writer: synchronous is NORMAL there, FULL elsewhere', async () => {
    assert.deepEqual(await db.raw('PRAGMA synchronous'), [{ synchronous: 1 }]);
    assert.deepEqual(await reader.raw('PRAGMA synchronous'), [{ synchronous: 2 }]);
  });

  it('a caller is answered after a sync that began after its commit; the next group commits meanwhile', { timeout: 20_000 }, async () => {
    const a = insert('a');
    await until(() => log.includes('sync asked'));
    assert.ok(await visible('a'), 'a is committed');
    assert.ok(!log.includes('answered a'), 'but not answered before its sync');
    const b = insert('b');
    await until(() => visible('b')); // the writer did not wait for a's sync to commit b
    assert.ok(!log.includes('answered b'));
    open();
    await Promise.all([a, b]);
    // b committed while a's sync was held: a second sync, begun after b's commit, answers b
    const done = log.flatMap((l, i) => (l === 'sync done' ? [i] : []));
    assert.equal(done.length, 2, log.join(', '));
    assert.ok(log.indexOf('answered a') > done[0], log.join(', '));
    assert.ok(log.indexOf('answered b') > done[1], log.join(', '));
  });

  it('an item of a kind answered before the sync hears at its commit; plain work of the same commit waits', async () => {
    const early: BatchKind<string, string> = {
      name: 'outcome-like',
      answerBeforeSync: true,
      async run(trx, ids) {
        await insertRows(trx, 'items', ids.map((id) => ({ id })));
        return ids;
      },
    };
    const outcome = writer.batch(early, 'o1').then(() => log.push('answered o1'));
    const plain = insert('p1');
    await outcome;
    assert.ok(!log.includes('answered p1'));
    open();
    await plain;
    assert.deepEqual(log.filter((l) => l.startsWith('answered')), ['answered o1', 'answered p1']);
  });

  it('a sync that fails fails its callers and every later one: a later sync that succeeds does not vouch for the WAL', async () => {
    failNext = true;
    open();
    await assert.rejects(insert('f1'), /EIO/);
    assert.ok(await visible('f1'), 'the row committed: the caller is told it may not be durable');
    // Linux may drop the pages whose write-back failed and report the error once: the next fdatasync succeeds while
    // f1's frames never reach the disk, and recovery stops at them, dropping every frame after (f2's too).
    await assert.rejects(insert('f2'), /EIO/);
    assert.ok(await visible('f2'));
    assert.ok(!log.includes('answered f2'), log.join(', '));
  });
});
