// The certificate of the SMTP listeners: generated self-signed on first start and reused, or the configured one; doctor says which.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { parseConfig } from '../../src/config';
import { checkSmtpTls } from '../../src/smtp';
import { selfSignedFile } from '../../src/smtp/tls';
import { createApp } from '../../src/app';
import { testConfig } from '../support/app';
import { testCertificate } from '../support/tls-cert';
import { createKey } from '../support/app';
import { RawSmtp, refusal, startSmtpApp, submissionClient } from './helpers';

/** STARTTLS by hand, trusting only `ca`: resolves with the certificate the server presented. */
async function starttls(port: number, ca: string, servername: string): Promise<tls.PeerCertificate> {
  const raw = await RawSmtp.connect(port);
  await raw.command('EHLO client.test');
  assert.match(await raw.command('STARTTLS'), /^220 /);
  raw.socket.removeAllListeners('data');
  const secure = tls.connect({ socket: raw.socket, ca, servername, rejectUnauthorized: true });
  await new Promise<void>((resolve, reject) => secure.once('secureConnect', resolve).once('error', reject));
  const cert = secure.getPeerCertificate();
  secure.destroy();
  return cert;
}

test('without a configured certificate, one is generated for the host name on first start, kept private, reused, and doctor warns', async () => {
  const app = await startSmtpApp();
  try {
    const file = selfSignedFile(app.config);
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    const pem = fs.readFileSync(file, 'utf8');
    const cert = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n/)![0];
    assert.equal(new crypto.X509Certificate(cert).subject, 'CN=mx.pigeon.test');
    const presented = await starttls(app.submissionPort, cert, 'mx.pigeon.test');
    assert.equal(presented.subject.CN, 'mx.pigeon.test');
    const inbound = await starttls(app.inboundPort, cert, 'mx.pigeon.test');
    assert.equal(inbound.fingerprint256, presented.fingerprint256, 'the inbound listener presents the same certificate');

    const [check] = await checkSmtpTls(app.config);
    assert.equal(check.status, 'warn');
    assert.match(check.detail, /self-signed certificate .*self-signed\.pem \(CN=mx\.pigeon\.test, expires .*\) in use; on a VPS set smtp\.submission\.tlsCert and tlsKey/);

    const second = await createApp(testConfig(app.dataDir, { hostname: 'mx.pigeon.test', log: { level: 'silent' } }));
    await second.close();
    assert.equal(fs.readFileSync(file, 'utf8'), pem, 'a second start reuses the certificate');
  } finally {
    await app.stop();
  }
});

test('a configured certificate is presented as is; doctor names it, and a key that does not match stops the start', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-tls-'));
  try {
    const { key, cert } = testCertificate();
    fs.writeFileSync(path.join(dir, 'cert.pem'), cert);
    fs.writeFileSync(path.join(dir, 'key.pem'), key);
    const tlsConfig = { tlsCert: path.join(dir, 'cert.pem'), tlsKey: path.join(dir, 'key.pem') };
    const app = await startSmtpApp({ smtp: { submission: tlsConfig } });
    try {
      const presented = await starttls(app.submissionPort, cert, 'localhost');
      assert.equal(presented.subject.CN, 'localhost');
      assert.equal(fs.existsSync(selfSignedFile(app.config)), false, 'nothing generated');
      const [check] = await checkSmtpTls(app.config);
      assert.equal(check.status, 'warn', 'the test certificate is self-signed');
      assert.match(check.detail, /cert\.pem: CN=localhost, expires .*: self-signed; clients will not trust it/);
    } finally {
      await app.stop();
    }
    const other = crypto.generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' });
    fs.writeFileSync(path.join(dir, 'other.pem'), other);
    const bad = { ...tlsConfig, tlsKey: path.join(dir, 'other.pem') };
    await assert.rejects(createApp(testConfig(fs.mkdtempSync(path.join(dir, 'data-')), { smtp: { submission: bad } })), /other\.pem is not the private key of .*cert\.pem/);
    const [missing] = await checkSmtpTls(parseConfig({ smtp: { submission: { tlsCert: path.join(dir, 'nope.pem'), tlsKey: path.join(dir, 'key.pem') } } }));
    assert.equal(missing.status, 'fail');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('with smtp.submission.secure the port speaks TLS from the first byte (port 465 style)', async () => {
  const app = await startSmtpApp({ smtp: { submission: { secure: true, allowInsecureAuth: false } } });
  try {
    const key = await createKey(app, 'test', ['messages:send']);
    const client = submissionClient(app.submissionPort, key, { secure: true });
    const info = await client.sendMail({ from: 'app@example.com', to: 'ann@example.org', subject: 'Hi', text: 'over TLS' });
    assert.match(info.response, /^250 2\.0\.0 Ok: queued as msg_/);
    client.close();
    const plain = await refusal(submissionClient(app.submissionPort, key, { ignoreTLS: true, connectionTimeout: 1500, greetingTimeout: 1500 }).verify());
    assert.ok(plain.code === 0, `a plain-text client gets no SMTP greeting: ${plain.response}`);
  } finally {
    await app.stop();
  }
});
