/**
 * Encryption at rest for secrets the appliance must be able to read back
 * (DKIM private keys, webhook signing secrets). One random 32-byte master key
 * lives in `<dataDir>/secret.key` (mode 0600, created on first use); each use
 * derives its own key from it with HKDF, so a key for one purpose never
 * decrypts another's data. Losing secret.key makes every sealed value
 * unreadable: it must be backed up together with the database.
 *
 * Sealed format: `v1.<base64(iv[12] | tag[16] | ciphertext)>`, AES-256-GCM.
 * The optional `aad` binds a ciphertext to where it is stored (e.g. a row id),
 * so a sealed value copied to another row does not open.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ensurePrivateDir } from '../util/private-fs';

export const MASTER_KEY_FILE = 'secret.key';
const MASTER_KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const VERSION = 'v1';

export class SecretBoxError extends Error {}

// One entry per dataDir (one per app in the process).
const cache = new Map<string, Buffer>();

/**
 * Reads `<dataDir>/secret.key`, creating it (0600) when it does not exist yet.
 * Creation writes a temporary file and hard-links it into place, so two
 * processes starting at once (the server and the CLI) agree on one key and a
 * crash never leaves a short file.
 */
export function loadOrCreateMasterKey(dataDir: string): Buffer {
  const file = path.resolve(dataDir, MASTER_KEY_FILE);
  const cached = cache.get(file);
  if (cached) return cached;
  if (!fs.existsSync(file)) create(file);
  const key = fs.readFileSync(file);
  if (key.length !== MASTER_KEY_BYTES) {
    throw new SecretBoxError(`${file} must hold exactly ${MASTER_KEY_BYTES} bytes (it holds ${key.length}); restore it from backup`);
  }
  cache.set(file, key);
  return key;
}

function create(file: string): void {
  ensurePrivateDir(path.dirname(file));
  const tmp = `${file}.${process.pid}.${crypto.randomBytes(4).toString('hex')}.tmp`;
  const fd = fs.openSync(tmp, 'wx', 0o600);
  try {
    fs.writeSync(fd, crypto.randomBytes(MASTER_KEY_BYTES));
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

/** A 32-byte key for one purpose ('dkim', 'verp', 'webhook-secrets'…), derived from the master key with HKDF-SHA256. */
export function deriveKey(masterKey: Buffer, purpose: string): Buffer {
  return Buffer.from(crypto.hkdfSync('sha256', masterKey, Buffer.alloc(0), `pigeon:${purpose}`, 32));
}

export function seal(key: Buffer, plaintext: string | Buffer, aad = ''): string {
  const iv = crypto.randomBytes(IV_BYTES);
  const cipher = crypto.createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return `${VERSION}.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
}

/** Throws SecretBoxError when the value was tampered with, or sealed under another key or aad. */
export function open(key: Buffer, sealed: string, aad = ''): Buffer {
  const [version, payload] = sealed.split('.', 2);
  if (version !== VERSION || !payload) throw new SecretBoxError('not a sealed value');
  const raw = Buffer.from(payload, 'base64');
  if (raw.length < IV_BYTES + TAG_BYTES) throw new SecretBoxError('sealed value is truncated');
  const decipher = crypto.createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
  decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
  } catch {
    throw new SecretBoxError('sealed value does not open with this key (wrong secret.key, or tampered)');
  }
}
