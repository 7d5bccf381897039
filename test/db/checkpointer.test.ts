// WAL checkpoints beside the writer: they copy committed pages into the database file without holding up
// commits, and under writes that never pause the writer's own turn rewinds the WAL so it stays bounded.
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../src/config';
import { openCheckpointConnection, openDatabase, sqliteKnex, type Db } from '../../src/db';
import { WalCheckpointer, type WalState } from '../../src/db/checkpointer';
import { Writer } from '../../src/db/writer';

describe('WAL checkpoints beside the writer', () => {
  let dir: string;
  let db: Db;
  let checkpointer: WalCheckpointer;
  let writer: Writer;
  let writerTurns: number;
  const blob = Buffer.alloc(6000, 7); // two pages and more per row

  const start = async (restartFrames: number) => {
    const config = parseConfig({ dataDir: dir });
    db = openDatabase(config, undefined, { autoCheckpoint: false });
    await db.schema.createTable('items', (t) => {
      t.integer('n').primary();
      t.binary('body');
    });
    // an interval no test waits for: the tests run each checkpoint themselves
    checkpointer = new WalCheckpointer(openCheckpointConnection(config), { intervalMs: 3_600_000, restartFrames, onError: (err) => assert.fail(String(err)) });
    const turns = {
      committed: () => checkpointer.committed(),
      takeWriterTurn: () => {
        const due = checkpointer.takeWriterTurn();
        if (due) writerTurns++;
        return due;
      },
      close: () => checkpointer.close(),
    };
    writer = new Writer(db, { maxWeight: 1, windowMs: 0, checkpoints: turns, onCheckpointError: (err) => assert.fail(String(err)) });
  };
  const insert = (n: number) => writer.run((trx) => trx('items').insert({ n, body: blob }));

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-checkpoint-'));
    writerTurns = 0;
  });
  afterEach(async () => {
    await writer.close();
    await db.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('copies committed rows into the database file on its own connection', async () => {
    await start(1_000_000);
    for (let n = 0; n < 20; n++) await insert(n);
    const state = await checkpointer.runOnce();
    assert.ok(state && state.log > 0, `the WAL held the commits: ${JSON.stringify(state)}`);
    assert.equal(state.checkpointed, state.log, 'every frame copied');
    // The database file alone (no -wal beside it) has every row: the checkpoint wrote and synced them there.
    const copy = path.join(dir, 'copy.sqlite');
    fs.copyFileSync(path.join(dir, 'pigeon.sqlite'), copy);
    const alone = sqliteKnex(copy, 1, '');
    try {
      assert.deepEqual(await alone('items').count({ c: '*' }), [{ c: 20 }]);
    } finally {
      await alone.destroy();
    }
  });

  it('under writes that never pause, the writer rewinds the WAL once it passes its bound', async () => {
    const restartFrames = 60;
    await start(restartFrames);
    const states: WalState[] = [];
    // Commits back to back, with a checkpoint started beside them every 10 commits.
    const writes: Array<Promise<unknown>> = [];
    for (let n = 0; n < 400; n++) {
      writes.push(insert(n));
      if (n % 10 === 9) writes.push(checkpointer.runOnce().then((s) => s && states.push(s)));
      if (n % 5 === 4) await writes[writes.length - 1];
    }
    await Promise.all(writes);
    assert.ok(writerTurns > 0, 'the WAL passed its bound and the writer took a turn');
    const most = Math.max(...states.map((s) => s.log));
    // 400 rows of two pages and more each: without a rewind the WAL would hold over 800 frames by the end.
    assert.ok(most < 400, `the WAL stayed bounded (most frames seen: ${most}; ${JSON.stringify(states.map((s) => s.log))})`);
    assert.deepEqual(await db('items').count({ c: '*' }), [{ c: 400 }]);
  });

  it('when its own connection cannot checkpoint, the writer takes the turn, so the WAL stays bounded', async () => {
    await start(1_000_000);
    const errors: unknown[] = [];
    // A connection that cannot open: its directory does not exist.
    const broken = sqliteKnex(path.join(dir, 'missing', 'pigeon.sqlite'), 1, '');
    const failing = new WalCheckpointer(broken, { intervalMs: 3_600_000, restartFrames: 1_000_000, onError: (err) => errors.push(err) });
    try {
      assert.equal(await failing.runOnce(), undefined, 'the checkpoint failed');
      assert.equal(errors.length, 1, 'the failure was reported');
      assert.equal(failing.takeWriterTurn(), true, 'the writer checkpoints on its own connection instead');
      assert.equal(failing.takeWriterTurn(), false, 'once per failed checkpoint');
    } finally {
      await failing.close();
    }
  });
});
