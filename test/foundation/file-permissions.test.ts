// The data directory is private to the service user whatever the umask: 0700, and 0600 for every file in it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestApp } from '../support/app';
import { loadOrCreateMasterKey } from '../../src/crypto/secret-box';

const modeOf = (file: string): string => (fs.statSync(file).mode & 0o777).toString(8);

/** Every file and directory under `dir`, with its mode. */
function modes(dir: string): Record<string, string> {
  const out: Record<string, string> = { '.': modeOf(dir) };
  for (const name of fs.readdirSync(dir, { recursive: true }) as string[]) out[name] = modeOf(path.join(dir, name));
  return out;
}

describe('data directory permissions', () => {
  it('started with umask 000, pigeon.sqlite (and -wal/-shm), secret.key and the TLS key are 0600 in a 0700 dataDir', async () => {
    const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-perm-'));
    const dataDir = path.join(parent, 'data');
    const previous = process.umask(0o000);
    try {
      const app = await startTestApp({ dataDir });
      try {
        await app.api.get('/v1/account'); // a write: the WAL exists
        loadOrCreateMasterKey(dataDir);
        const found = modes(dataDir);
        for (const name of ['pigeon.sqlite', 'pigeon.sqlite-wal', 'pigeon.sqlite-shm', 'secret.key', path.join('tls', 'self-signed.pem')]) assert.ok(name in found, `${name} exists: ${JSON.stringify(found)}`);
        for (const [name, mode] of Object.entries(found)) {
          const isDir = fs.statSync(path.join(dataDir, name)).isDirectory();
          assert.equal(mode, isDir ? '700' : '600', `${name} is ${mode}`);
        }
      } finally {
        await app.stop();
      }
    } finally {
      process.umask(previous);
      fs.rmSync(parent, { recursive: true, force: true });
    }
  });

  it('an existing world-readable dataDir and database are tightened to 0700/0600 at start', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-perm-'));
    fs.chmodSync(dataDir, 0o755);
    fs.writeFileSync(path.join(dataDir, 'pigeon.sqlite'), '');
    fs.chmodSync(path.join(dataDir, 'pigeon.sqlite'), 0o644);
    const app = await startTestApp({ dataDir });
    try {
      assert.equal(modeOf(dataDir), '700');
      assert.equal(modeOf(path.join(dataDir, 'pigeon.sqlite')), '600');
    } finally {
      await app.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
