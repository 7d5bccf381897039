// The data directory's files are created 0600 (src/util/private-fs.ts), and checking an existing database file
// leaves SQLite's locks on it alone: closing any descriptor of a file drops every POSIX lock the process holds on
// it, and the doctor route checks the file while the server's own connections hold their shared lock.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../src/config';
import { openDatabase, type Db } from '../../src/db';
import { ensurePrivateFile } from '../../src/util/private-fs';

/** The POSIX locks this process holds on `file`, from /proc/locks (Linux). */
function locksOn(file: string): string[] {
  const inode = fs.statSync(file).ino;
  return fs.readFileSync('/proc/locks', 'utf8').split('\n')
    .filter((line) => line.includes(' POSIX ') && line.split(/\s+/).includes(String(process.pid)) && line.includes(`:${inode} `));
}

describe('private files', () => {
  let dir: string;
  let db: Db;
  let file: string;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-private-'));
    db = openDatabase(parseConfig({ dataDir: dir }));
    await db.raw('CREATE TABLE t (x)');
    file = path.join(dir, 'pigeon.sqlite');
  });
  after(async () => {
    await db.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('creates a missing file 0600 and tightens an existing one', () => {
    const fresh = path.join(dir, 'fresh');
    ensurePrivateFile(fresh);
    assert.equal(fs.statSync(fresh).mode & 0o777, 0o600);
    fs.chmodSync(fresh, 0o644);
    ensurePrivateFile(fresh);
    assert.equal(fs.statSync(fresh).mode & 0o777, 0o600);
  });

  it('checking the open database file keeps the shared lock its connection holds', { skip: !fs.existsSync('/proc/locks') }, () => {
    assert.ok(fs.existsSync(file), `the database is ${file}`);
    const held = locksOn(file);
    assert.ok(held.length > 0, 'the connection holds a lock on the database file');
    ensurePrivateFile(file);
    assert.deepEqual(locksOn(file), held);
  });
});
