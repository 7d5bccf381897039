/**
 * The appliance's master secret: 32 random bytes in `<dataDir>/secret.key`
 * (mode 0600), created on first use. Nothing uses it directly; each purpose
 * (VERP tokens, encrypted keys at rest…) derives its own key with HKDF, so a
 * key leaked from one purpose says nothing about another.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const KEY_FILE = 'secret.key';
const KEY_BYTES = 32;
const cache = new Map<string, Buffer>();

/**
 * Reads the master key, creating it if absent. Creation writes a temporary
 * file and hard-links it into place, so two processes starting at once (the
 * server and the CLI) agree on one key and a crash never leaves a short file.
 */
export function loadOrCreateMasterKey(dataDir: string): Buffer {
  const file = path.resolve(dataDir, KEY_FILE);
  const cached = cache.get(file);
  if (cached) return cached;
  if (!fs.existsSync(file)) create(file);
  const key = fs.readFileSync(file);
  if (key.length !== KEY_BYTES) throw new Error(`${file} must hold exactly ${KEY_BYTES} bytes; it holds ${key.length}`);
  cache.set(file, key);
  return key;
}

function create(file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.${crypto.randomBytes(4).toString('hex')}.tmp`;
  const fd = fs.openSync(tmp, 'wx', 0o600);
  try {
    fs.writeSync(fd, crypto.randomBytes(KEY_BYTES));
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  try {
    fs.linkSync(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err; // another process won the race: use its key
  } finally {
    fs.unlinkSync(tmp);
  }
}

/** A 32-byte key for one purpose (e.g. 'verp'), derived from the master key with HKDF-SHA256. */
export function deriveKey(masterKey: Buffer, purpose: string): Buffer {
  return Buffer.from(crypto.hkdfSync('sha256', masterKey, Buffer.alloc(0), `pigeon:${purpose}`, 32));
}
