// DKIM verification against the test DNS, the way tests will check what the MTA delivered.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import nodemailer from 'nodemailer';
import { startDnsServer, type TestDnsServer } from './dns-server';
import { startSmtpSink } from './smtp-sink';
import { dkimTxtRecord, parseMail, verifyDkim } from './mail';

const { dkimSign } = require('mailauth/lib/dkim/sign') as {
  dkimSign(input: Buffer, options: { signTime: Date; signatureData: Array<{ signingDomain: string; selector: string; privateKey: string }> }): Promise<{ signatures: string; errors: unknown[] }>;
};

const message = Buffer.from(
  [
    'From: Pigeon <hello@example.test>',
    'To: alice@recipient.test',
    'Subject: Your receipt',
    'Message-ID: <r1@example.test>',
    'Date: Sat, 21 Nov 2026 10:00:00 +0000',
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'Thanks for your order.',
    '.leading dot survives SMTP dot-stuffing',
    '',
  ].join('\r\n'),
);

const pem = (key: KeyObject) => key.export({ type: 'pkcs8', format: 'pem' }).toString();

async function sign(raw: Buffer, keys: Array<{ selector: string; privateKey: KeyObject }>): Promise<Buffer> {
  const signatureData = keys.map((k) => ({ signingDomain: 'example.test', selector: k.selector, privateKey: pem(k.privateKey) }));
  // signTime fixed: mailauth otherwise reads the clock twice, and a change of the rounded second between them breaks the signature.
  const { signatures, errors } = await dkimSign(raw, { signTime: new Date(), signatureData });
  assert.deepEqual(errors, []);
  return Buffer.concat([Buffer.from(signatures), raw]);
}

describe('DKIM verification against the test DNS', () => {
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const ed = generateKeyPairSync('ed25519');
  let dns: TestDnsServer;

  before(async () => {
    dns = await startDnsServer({
      'rsa._domainkey.example.test': [{ type: 'TXT', data: dkimTxtRecord(rsa.publicKey) }],
      'ed._domainkey.example.test': [{ type: 'TXT', data: dkimTxtRecord(ed.publicKey) }],
    });
  });
  after(() => dns.close());

  it('publishes an RSA-2048 key as several TXT strings', () => {
    const chunks = dkimTxtRecord(rsa.publicKey);
    assert.ok(chunks.length > 1);
    assert.ok(chunks.every((c) => c.length <= 255));
    assert.match(chunks.join(''), /^v=DKIM1; k=rsa; p=MIIBIjAN/);
  });

  it('passes an RSA and an Ed25519 signature', async () => {
    const signed = await sign(message, [
      { selector: 'rsa', privateKey: rsa.privateKey },
      { selector: 'ed', privateKey: ed.privateKey },
    ]);
    const results = await verifyDkim(signed, dns.address);
    assert.deepEqual(
      results.map((r) => [r.result, r.signingDomain, r.selector, r.algo]),
      [
        ['pass', 'example.test', 'rsa', 'rsa-sha256'],
        ['pass', 'example.test', 'ed', 'ed25519-sha256'],
      ],
    );
  });

  it('fails a tampered header and a tampered body', async () => {
    const signed = await sign(message, [{ selector: 'rsa', privateKey: rsa.privateKey }]);
    const header = Buffer.from(signed.toString().replace('Your receipt', 'Your receipT'));
    assert.equal((await verifyDkim(header, dns.address))[0].result, 'fail');
    const body = Buffer.from(signed.toString().replace('Thanks', 'thanks'));
    const [result] = await verifyDkim(body, dns.address);
    assert.equal(result.result, 'neutral'); // mailauth's word for a body hash mismatch
    assert.equal(result.comment, 'body hash did not verify');
  });

  it('reports a missing key and an unsigned message', async () => {
    const signed = await sign(message, [{ selector: 'unknown', privateKey: rsa.privateKey }]);
    assert.deepEqual(
      (await verifyDkim(signed, dns.address)).map((r) => [r.result, r.comment]),
      [['neutral', 'no key']],
    );
    assert.equal((await verifyDkim(message, dns.address))[0].result, 'none');
  });

  it('still passes after relaying through the SMTP sink, and parses', async () => {
    const signed = await sign(message, [{ selector: 'rsa', privateKey: rsa.privateKey }]);
    const sink = await startSmtpSink();
    try {
      const transport = nodemailer.createTransport({ host: sink.host, port: sink.port, secure: false });
      await transport.sendMail({ envelope: { from: 'b+r1@bounces.example.test', to: ['alice@recipient.test'] }, raw: signed });
      const [received] = await sink.waitFor(1);
      assert.deepEqual(received.raw, signed);
      assert.equal((await verifyDkim(received.raw, dns.address))[0].result, 'pass');
      const parsed = await parseMail(received.raw);
      assert.equal(parsed.subject, 'Your receipt');
      assert.equal(parsed.messageId, '<r1@example.test>');
      assert.match(parsed.text ?? '', /^\.leading dot/m);
    } finally {
      await sink.close();
    }
  });
});
