// The at-rest encryption helper other modules reuse: one master key file, a derived key per purpose.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { deriveKey, loadOrCreateMasterKey, open, seal, SecretBoxError } from '../../src/crypto/secret-box';
import { tempDir } from '../support/temp-dir';

describe('secret box', () => {
  const dir = tempDir('box');

  it('creates <dataDir>/secret.key once, 32 bytes, mode 0600, and reads the same key afterwards', () => {
    const nested = path.join(dir, 'data');
    const key = loadOrCreateMasterKey(nested);
    const file = path.join(nested, 'secret.key');
    assert.equal(key.length, 32);
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    assert.deepEqual(fs.readFileSync(file), key);
    assert.deepEqual(loadOrCreateMasterKey(nested), key);
  });

  it('refuses a key file of the wrong size', () => {
    const bad = path.join(dir, 'bad');
    fs.mkdirSync(bad);
    fs.writeFileSync(path.join(bad, 'secret.key'), 'short');
    assert.throws(() => loadOrCreateMasterKey(bad), /exactly 32 bytes/);
  });

  it('seals and opens; another purpose, another aad or a flipped bit does not open', () => {
    const master = loadOrCreateMasterKey(dir);
    const dkim = deriveKey(master, 'dkim');
    const hooks = deriveKey(master, 'webhook-secrets');
    assert.notDeepEqual(dkim, hooks);
    assert.deepEqual(deriveKey(master, 'dkim'), dkim, 'derivation is deterministic');
    const sealed = seal(dkim, 'the secret', 'row-1');
    assert.match(sealed, /^v1\./);
    assert.notEqual(seal(dkim, 'the secret', 'row-1'), sealed, 'a fresh IV every time');
    assert.equal(open(dkim, sealed, 'row-1').toString(), 'the secret');
    assert.throws(() => open(hooks, sealed, 'row-1'), SecretBoxError);
    assert.throws(() => open(dkim, sealed, 'row-2'), SecretBoxError);
    const raw = Buffer.from(sealed.slice(3), 'base64');
    raw[raw.length - 1] ^= 1;
    assert.throws(() => open(dkim, `v1.${raw.toString('base64')}`, 'row-1'), SecretBoxError);
    assert.throws(() => open(dkim, 'v2.abc'), /not a sealed value/);
  });
});
