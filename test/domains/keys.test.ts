// DKIM keys: sealed at rest, never shown, usable for signing, and rotated only once the new record verifies.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { getSigningKey, type SigningKey } from '../../src/domains/signing';
import { liveApi, startTestApp, type ApiResponse, type TestApp } from '../support/app';
import { startDnsServer, type TestDnsServer } from '../support/dns-server';
import { verifyDkim } from '../support/mail';
import { addDomain, publish, record, verify } from './helpers';

const { dkimSign } = require('mailauth/lib/dkim/sign') as {
  dkimSign(input: Buffer, options: { signTime: Date; signatureData: Array<{ signingDomain: string; selector: string; privateKey: string }> }): Promise<{ signatures: string; errors: unknown[] }>;
};

async function signedMessage(key: SigningKey): Promise<Buffer> {
  const message = Buffer.from(
    `From: app@${key.domain}\r\nTo: someone@receiver.test\r\nSubject: hello\r\nDate: Mon, 05 Jan 2026 09:00:00 +0000\r\nMessage-ID: <1@${key.domain}>\r\n\r\nHello there.\r\n`,
  );
  // signTime fixed: without it mailauth reads the clock once for the signed header and again for the written
  // one (t=, rounded to the second), and a signature made while the rounded second changes fails to verify
  // (1 in 3,000 in a loop).
  const { signatures, errors } = await dkimSign(message, { signTime: new Date(), signatureData: [{ signingDomain: key.domain, selector: key.selector, privateKey: key.privateKeyPem }] });
  assert.deepEqual(errors, []);
  return Buffer.concat([Buffer.from(signatures), message]);
}

/** The base64 body of a PEM: what must never appear anywhere. */
const pemBody = (pem: string) => pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');

describe('DKIM keys', () => {
  let dns: TestDnsServer;
  let app: TestApp;
  const responses: ApiResponse[] = [];
  let accountId: string;
  /** Every private key seen in this suite (including a rotated-out one), as PEM bodies. */
  const seen = new Set<string>();
  const signingKey = async (domain: string, account = accountId) => {
    const key = await getSigningKey(app.db, app.dataDir, account, domain);
    if (key) seen.add(pemBody(key.privateKeyPem));
    return key;
  };

  before(async () => {
    dns = await startDnsServer();
    app = await startTestApp({ dns: { servers: [dns.address] }, domains: { dnsTimeoutMs: 150 }, log: { level: 'trace' } });
    app.api = await liveApi(app); // rotation needs a live key
    // Every response of this suite is kept, to search for key material at the end.
    for (const method of ['get', 'post', 'delete'] as const) {
      const original = app.api[method].bind(app.api) as (...args: unknown[]) => Promise<ApiResponse>;
      (app.api as unknown as Record<string, unknown>)[method] = async (...args: unknown[]) => {
        const res = await original(...args);
        responses.push(res);
        return res;
      };
    }
    accountId = (await app.api.get('/v1/account')).body.id;
  });
  after(async () => {
    await app.stop();
    await dns.close();
  });

  it('signatures made with the signing key verify against the published record (RSA and Ed25519)', async () => {
    for (const [name, algorithm] of [['signed.test', 'rsa'], ['signed-ed.test', 'ed25519']] as const) {
      const d = await addDomain(app.api, name, { dkim_algorithm: algorithm });
      publish(dns, d);
      const key = await signingKey(name);
      assert.ok(key);
      assert.deepEqual([key.domain, key.selector, key.algorithm], [name, d.dkim?.selector, algorithm]);
      assert.match(key.privateKeyPem, /^-----BEGIN PRIVATE KEY-----/);
      const [result] = await verifyDkim(await signedMessage(key), dns.address);
      assert.equal(result.result, 'pass', `${algorithm}: ${result.info}`);
      assert.equal(result.selector, d.dkim?.selector);
    }
    assert.equal(await signingKey('unknown.test'), null);
    assert.equal(await signingKey('signed.test', 'acc_nobody'), null);
  });

  it('the private key is sealed at rest under <dataDir>/secret.key (mode 0600)', async () => {
    const key = await signingKey('signed.test');
    assert.ok(key);
    const file = path.join(app.dataDir, 'secret.key');
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    assert.equal(fs.statSync(file).size, 32);
    const rows = await app.db('domain_keys').select('private_key_sealed');
    for (const row of rows) {
      assert.match(row.private_key_sealed, /^v1\./);
      assert.doesNotMatch(row.private_key_sealed, /PRIVATE KEY/);
    }
    const db = fs.readFileSync(path.join(app.dataDir, 'pigeon.sqlite'));
    assert.equal(db.includes(pemBody(key.privateKeyPem).slice(0, 64)), false, 'no plaintext key in the database file');
  });

  it('a rotation key signs only after its record verifies; the old key stays until then', async () => {
    const d = await addDomain(app.api, 'rotate.test');
    publish(dns, d);
    assert.equal((await verify(app.api, 'rotate.test')).status, 'verified');
    const oldSelector = d.dkim!.selector;

    const rotated = await app.api.post('/v1/domains/rotate.test/dkim/rotate');
    assert.equal(rotated.status, 200);
    const pending = record(rotated.body, 'dkim', 'pending');
    assert.notEqual(pending.selector, oldSelector);
    assert.equal(pending.required, false);
    assert.equal(rotated.body.dkim.selector, oldSelector);
    assert.equal((await app.api.post('/v1/domains/rotate.test/dkim/rotate')).body.error.code, 'rotation_pending');

    // Not published yet: the old key keeps signing and the domain stays verified.
    let after = await verify(app.api, 'rotate.test');
    assert.equal(record(after, 'dkim', 'pending').state, 'missing');
    assert.equal(after.status, 'verified');
    assert.equal((await signingKey('rotate.test'))?.selector, oldSelector);

    dns.set(pending.host, [{ type: 'TXT', data: pending.value.match(/.{1,255}/g)! }]);
    after = await verify(app.api, 'rotate.test');
    assert.equal(after.dkim?.selector, pending.selector);
    assert.deepEqual(after.dns_records.filter((r) => r.purpose === 'dkim').map((r) => [r.selector, r.key_status, r.state]), [[pending.selector, 'active', 'verified']]);
    const key = await signingKey('rotate.test');
    assert.equal(key?.selector, pending.selector);
    assert.equal((await verifyDkim(await signedMessage(key!), dns.address))[0].result, 'pass');
    const events = await app.db('domain_events').where({ domain: 'rotate.test' }).orderBy('id');
    assert.deepEqual(events.map((e) => e.type), ['domain.verified', 'domain.dkim_rotated']);
  });

  it('no API response and no log line carries a private key', async () => {
    await app.api.get('/v1/domains?limit=100');
    for (const name of ['signed.test', 'signed-ed.test', 'rotate.test']) await app.api.get(`/v1/domains/${name}`);
    const bodies = responses.map((r) => r.text).join('\n');
    const logs = app.logs.join('\n');
    assert.ok(app.logs.some((l) => l.includes('domain added')), 'the log was captured');
    assert.equal(seen.size, 4, 'rsa, ed25519, and both keys of the rotation');
    for (const secret of seen) {
      for (const fragment of [secret, secret.slice(0, 40), secret.slice(-40)]) {
        assert.equal(bodies.includes(fragment), false, 'private key material in an API response');
        assert.equal(logs.includes(fragment), false, 'private key material in the log');
      }
    }
    assert.doesNotMatch(bodies + logs, /PRIVATE KEY|private_key/);
  });
});
