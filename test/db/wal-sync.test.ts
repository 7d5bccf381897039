// The COMMIT's fsync beside the writer (src/db/wal-sync.ts): the server's writer connection commits at NORMAL,
// and no one hears of a commit before an fdatasync of the WAL that began after it has returned. The syncs here
// are the real ones on the real -wal file, held or failed on purpose through the file calls.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseConfig, type Config } from '../../src/config';
import { openDatabase, walSyncOf, type Db } from '../../src/db';
import { insertRows } from '../../src/db/buffer';
import { walFileCalls, WalSync, type SyncCalls } from '../../src/db/wal-sync';
import { Writer } from '../../src/db/writer';
import { eventually } from '../support/wait';

/** Real file calls that log what they do, and whose fdatasync can be held at its start or made to fail once. */
function controlledCalls() {
  const log: string[] = [];
  const opened: string[] = [];
  let held: Array<() => void> | undefined;
  let failure: Error | undefined;
  let linksFailure: Error | undefined;
  const calls: SyncCalls = {
    open: (file) => (log.push('open'), opened.push(file), walFileCalls.open(file)),
    async fdatasync(fd) {
      log.push('fdatasync');
      if (held) await new Promise<void>((resolve) => held!.push(resolve));
      if (failure) {
        const err = failure;
        failure = undefined; // the disk answers again: a later success must prove nothing
        throw err;
      }
      return walFileCalls.fdatasync(fd);
    },
    async links(fd) {
      log.push('fstat');
      const err = linksFailure;
      linksFailure = undefined;
      if (err) throw err;
      return walFileCalls.links(fd);
    },
    close: (fd) => (log.push('close'), walFileCalls.close(fd)),
  };
  return {
    calls,
    log,
    opened,
    syncs: () => log.filter((c) => c === 'fdatasync').length,
    hold: () => void (held = []),
    release: () => {
      const waiting = held ?? [];
      held = undefined;
      waiting.forEach((resolve) => resolve());
    },
    fail: (err: Error) => void (failure = err),
    failLinks: (err: Error) => void (linksFailure = err),
  };
}

/** A promise and whether it has settled yet (a knex query runs once per then: it is made a promise first). */
function track<T>(query: PromiseLike<T>) {
  const promise = Promise.resolve(query);
  const state = { settled: false, promise };
  promise.then(() => (state.settled = true), () => (state.settled = true));
  return state;
}

const pause = (ms = 30) => new Promise((resolve) => setTimeout(resolve, ms));
const waitFor = (done: () => boolean | Promise<boolean>) => eventually(async () => done(), 5000, 'the awaited state');

/**
 * Runs `query` with the syncs held: it must ask for a sync and get no answer until that sync returns. `whileHeld`
 * checks the state meanwhile (e.g. that the commit itself is done).
 */
async function answeredOnlyAfterSync(sync: ReturnType<typeof controlledCalls>, query: () => PromiseLike<unknown>, whileHeld?: () => Promise<void>) {
  sync.hold();
  const syncsBefore = sync.syncs();
  const pending = track(query());
  await waitFor(() => sync.syncs() > syncsBefore);
  await whileHeld?.();
  await pause();
  assert.equal(pending.settled, false, 'no answer before the sync returned');
  sync.release();
  await pending.promise;
}

describe('the WAL synced beside the writer', () => {
  let dir: string;
  let config: Config;
  let sync: ReturnType<typeof controlledCalls>;
  let db: Db;
  let reader: Db;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-walsync-'));
    config = parseConfig({ dataDir: dir });
    sync = controlledCalls();
    db = openDatabase(config, undefined, { syncBeside: true, syncCalls: sync.calls });
    reader = openDatabase(config);
    await db.schema.createTable('items', (t) => t.string('id').primary());
  });
  after(async () => {
    sync.release();
    await db.destroy();
    await reader.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const visible = async (id: string) => Boolean(await reader('items').where({ id }).first());

  it('runs the server\'s writer connection at NORMAL; any other handle keeps the configured FULL', async () => {
    assert.equal((await db.raw('PRAGMA synchronous'))[0].synchronous, 1);
    assert.equal((await reader.raw('PRAGMA synchronous'))[0].synchronous, 2);
    assert.ok(walSyncOf(db));
    assert.equal(walSyncOf(reader), undefined);
    const normal = openDatabase(parseConfig({ dataDir: dir, database: { synchronous: 'NORMAL' } }), undefined, { syncBeside: true });
    try {
      assert.equal(walSyncOf(normal), undefined, 'NORMAL asked for: nothing to keep');
    } finally {
      await normal.destroy();
    }
  });

  it('a write outside a transaction is answered only once a sync begun after its commit returns', async () => {
    await answeredOnlyAfterSync(sync, () => db('items').insert({ id: 'direct' }), async () => {
      assert.ok(await visible('direct'), 'committed');
    });
  });

  it('an explicit transaction\'s COMMIT is held the same way; reads and checkpoints are not', async () => {
    await answeredOnlyAfterSync(sync, () => db.transaction((t) => t('items').insert({ id: 'in-trx' })));

    sync.hold();
    const syncsNow = sync.syncs();
    assert.equal((await db('items').where({ id: 'in-trx' })).length, 1);
    await db.raw('PRAGMA wal_checkpoint(PASSIVE)');
    assert.equal(sync.syncs(), syncsNow, 'a read asks for no sync');
    sync.release();
  });

  it('a sync already running when a commit ends does not answer it: the callers meanwhile share the next one', async () => {
    const walSync = new WalSync(path.join(dir, 'pigeon.sqlite-wal'), sync.calls);
    walSync.attach(); // as syncCommits does for its connection
    sync.hold();
    const syncsBefore = sync.syncs();
    const first = track(walSync.sync());
    await waitFor(() => sync.syncs() === syncsBefore + 1);
    const later = [track(walSync.sync()), track(walSync.sync()), track(walSync.sync())];
    sync.release();
    await first.promise;
    sync.hold();
    await waitFor(() => sync.syncs() === syncsBefore + 2);
    await pause();
    assert.deepEqual(later.map((l) => l.settled), [false, false, false], 'they wait for a sync of their own');
    sync.release();
    await Promise.all(later.map((l) => l.promise));
    assert.equal(sync.syncs(), syncsBefore + 2, 'one more sync for all three');
    await walSync.close();
  });

  it('the writer answers a group after its sync and commits the next group meanwhile', async () => {
    const writer = new Writer(db, { maxWeight: 100, windowMs: 0, walSync: walSyncOf(db) });
    sync.hold();
    const first = track(writer.run((trx) => insertRows(trx, 'items', [{ id: 'group-1' }])));
    await waitFor(() => visible('group-1'));
    const second = track(writer.run((trx) => insertRows(trx, 'items', [{ id: 'group-2' }])));
    await waitFor(() => visible('group-2'));
    await pause();
    assert.deepEqual([first.settled, second.settled], [false, false], 'committed, not answered: the first sync is held');
    const drained = track(writer.drained());
    await pause();
    assert.equal(drained.settled, false, 'drained waits for the syncs too');
    sync.release();
    await Promise.all([first.promise, second.promise, drained.promise]);
  });

  it('a claim is used up by its own transaction, even one rolled back: the next commit is held', async () => {
    walSyncOf(db)!.claimNextCommit();
    await assert.rejects(db.transaction(async (trx) => {
      await trx('items').insert({ id: 'rolled-back' });
      throw new Error('work failed');
    }), /work failed/);
    await answeredOnlyAfterSync(sync, () => db.transaction((trx) => trx('items').insert({ id: 'after-rollback' })));
    assert.equal(await visible('rolled-back'), false);
  });

  /** A WalSync of `file` with `open` connections attached, each having run a statement (as syncCommits reports). */
  function walSyncWith(file: string, open: number) {
    const log = controlledCalls();
    const walSync = new WalSync(file, log.calls);
    for (let i = 0; i < open; i++) {
      walSync.attach();
      walSync.holding();
    }
    return { log, walSync, fstats: () => log.log.filter((c) => c === 'fstat').length };
  }

  it('a WAL that SQLite deleted and wrote anew is opened again', async () => {
    const file = path.join(dir, 'other.sqlite-wal');
    fs.writeFileSync(file, 'frames');
    const { log, walSync } = walSyncWith(file, 2);
    await walSync.sync();
    walSync.closing(true); // as syncCommits does before SQLite closes a connection, which may delete the WAL
    fs.unlinkSync(file);
    fs.writeFileSync(file, 'new frames');
    await walSync.sync();
    await walSync.sync();
    // the third sync checks too: a connection is still closing
    assert.deepEqual(log.log, ['open', 'fdatasync', 'fstat', 'fdatasync', 'fstat', 'close', 'open', 'fdatasync', 'fdatasync', 'fstat']);
    await walSync.close();
    assert.equal(log.log.at(-1), 'close');
  });

  it('skips the fstat once the WAL was found linked while a connection held the lock and none was closing', async () => {
    const file = path.join(dir, 'kept.sqlite-wal');
    fs.writeFileSync(file, 'frames');
    const { walSync, fstats } = walSyncWith(file, 2);
    for (let i = 0; i < 3; i++) await walSync.sync();
    assert.equal(fstats(), 1, 'only the first sync checks the link');
    walSync.closing(true);
    await walSync.sync();
    await walSync.sync();
    assert.equal(fstats(), 3, 'while a connection closes, every sync checks');
    await walSync.close();
    await walSync.sync();
    await walSync.sync();
    assert.equal(fstats(), 4, 'the close ended and one still holds the lock: checked once, then trusted again');
    walSync.closing(true);
    await walSync.close();
    walSync.attach(); // a new connection that has run nothing yet holds no lock: another process's close may be the last
    await walSync.sync();
    await walSync.sync();
    assert.equal(fstats(), 6);
    walSync.holding();
    await walSync.sync();
    await walSync.sync();
    assert.equal(fstats(), 7);
    await walSync.close();
  });

  it('a check that a whole close happened during proves nothing: the sync queued behind it finds the new WAL', async () => {
    const file = path.join(dir, 'raced.sqlite-wal');
    fs.writeFileSync(file, 'frames');
    const { log, walSync } = walSyncWith(file, 2);
    log.hold();
    const first = walSync.sync();
    await waitFor(() => log.log.includes('fstat'));
    await pause(); // the fstat has found the file linked
    // then a connection closes and the WAL goes (as if that close were the last), and a new one is written
    walSync.closing(true);
    fs.unlinkSync(file);
    fs.writeFileSync(file, 'new frames');
    const closed = walSync.close(); // its close is counted at once, and waits for the syncs
    const second = walSync.sync();
    log.release();
    await Promise.all([first, second, closed]);
    assert.deepEqual(log.log, ['open', 'fdatasync', 'fstat', 'fdatasync', 'fstat', 'close', 'open', 'fdatasync', 'close']);
  });

  it('a WAL missing while a connection is open fails that sync only; after the last close it needs none', async () => {
    const file = path.join(dir, 'missing.sqlite-wal');
    const log = controlledCalls();
    const walSync = new WalSync(file, log.calls);
    walSync.attach(); // as syncCommits does for each connection the pool opens
    walSync.attach();
    await assert.rejects(walSync.sync(), /missing while its connection is open/);
    assert.equal(walSync.failure, undefined, 'nothing is known lost: not final');
    fs.writeFileSync(file, 'frames');
    await walSync.sync();
    fs.unlinkSync(file);
    await walSync.close();
    await assert.rejects(walSync.sync(), /missing/, 'one connection is still open');
    await walSync.close();
    log.log.length = 0;
    await walSync.sync();
    assert.deepEqual(log.log, ['open'], 'closed: SQLite synced the database file when it removed the WAL');
  });

  it('a failed fstat fails that sync only, once its fdatasync has returned; the next one syncs', async () => {
    const log = controlledCalls();
    const walSync = new WalSync(path.join(dir, 'pigeon.sqlite-wal'), log.calls);
    walSync.attach(); // as syncCommits does for its connection
    walSync.holding();
    log.failLinks(Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' }));
    log.hold();
    const failed = track(walSync.sync());
    await waitFor(() => log.syncs() === 1);
    await pause();
    assert.equal(failed.settled, false, 'no sync ends while its fdatasync runs: the next would overlap it');
    log.release();
    await assert.rejects(failed.promise, /EMFILE/);
    assert.equal(walSync.failure, undefined);
    await walSync.sync();
    assert.equal(log.syncs(), 2);
    await walSync.close();
  });

  it('close waits for the sync under way and the one queued behind it before it closes the descriptor', async () => {
    const log = controlledCalls();
    const walSync = new WalSync(path.join(dir, 'pigeon.sqlite-wal'), log.calls);
    walSync.attach(); // as syncCommits does for its connection
    log.hold();
    const first = walSync.sync();
    await waitFor(() => log.syncs() === 1);
    const queued = walSync.sync();
    const closed = walSync.close();
    log.release();
    await waitFor(() => log.syncs() === 2);
    log.release();
    await Promise.all([first, queued, closed]);
    // the connection closed during the first sync: neither found the WAL linked while one was open
    assert.deepEqual(log.log, ['open', 'fdatasync', 'fstat', 'fdatasync', 'fstat', 'close']);
  });
});

describe('a database file behind a symbolic link', () => {
  it('syncs the WAL that SQLite keeps beside the file the link points to', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-walsync-link-'));
    const data = path.join(dir, 'data');
    const volume = path.join(dir, 'volume');
    fs.mkdirSync(data);
    fs.mkdirSync(volume);
    fs.writeFileSync(path.join(volume, 'pigeon.sqlite'), '');
    fs.symlinkSync(path.join(volume, 'pigeon.sqlite'), path.join(data, 'pigeon.sqlite'));
    const sync = controlledCalls();
    const db = openDatabase(parseConfig({ dataDir: data }), undefined, { syncBeside: true, syncCalls: sync.calls });
    try {
      await db.schema.createTable('items', (t) => t.string('id').primary());
      await db('items').insert({ id: 'linked' });
      assert.ok(fs.existsSync(path.join(volume, 'pigeon.sqlite-wal')), 'SQLite wrote its WAL beside the target');
      assert.deepEqual([...new Set(sync.opened)], [path.join(fs.realpathSync(volume), 'pigeon.sqlite-wal')]);
      assert.ok(sync.syncs() >= 2, 'the table and the row were synced');
    } finally {
      await db.destroy();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a failed sync of the WAL', () => {
  it('fails the callers it owed and every write after it; reads go on', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-walsync-fail-'));
    const sync = controlledCalls();
    const db = openDatabase(parseConfig({ dataDir: dir }), undefined, { syncBeside: true, syncCalls: sync.calls });
    const failures: Error[] = [];
    try {
      await db.schema.createTable('items', (t) => t.string('id').primary());
      walSyncOf(db)!.onFailure = (err) => failures.push(err);
      const writer = new Writer(db, { maxWeight: 100, windowMs: 0, walSync: walSyncOf(db) });
      sync.fail(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
      await assert.rejects(writer.run((trx) => insertRows(trx, 'items', [{ id: 'owed' }])), /EIO/);
      assert.equal(failures.length, 1);
      const syncs = sync.syncs();
      await assert.rejects(db('items').insert({ id: 'direct' }), /EIO/);
      await assert.rejects(db.transaction((trx) => trx('items').insert({ id: 'in-trx' })), /EIO/);
      await assert.rejects(writer.run((trx) => insertRows(trx, 'items', [{ id: 'next' }])), /EIO/);
      assert.equal(sync.syncs(), syncs, 'refused before any sync: a later success would prove nothing');
      assert.deepEqual((await db('items').select('id')).map((r: { id: string }) => r.id), ['owed'], 'committed, never acknowledged');
      await assert.rejects(walSyncOf(db)!.sync(), /EIO/);
      assert.equal(sync.syncs(), syncs, 'the sync itself refuses too');
    } finally {
      await db.destroy();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
