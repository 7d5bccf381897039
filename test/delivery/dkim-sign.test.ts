// The DKIM signer canonicalises and hashes messages itself; mailauth's verifier (as a receiver would) checks every case.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import { startDnsServer, type TestDnsServer } from '../support/dns-server';
import { dkimTxtRecord, verifyDkim } from '../support/mail';
import { signMessage, type SigningKey } from '../../src/delivery/dkim';
import { createSigner } from '../../src/delivery/signer';
import { HELPER_THREAD_NICE } from '../../src/util/thread-priority';

const DOMAIN = 'shop.test';
const NOW = Date.UTC(2026, 0, 5, 9, 0, 0);

function publish(dns: TestDnsServer, selector: string, type: 'rsa' | 'ed25519'): string {
  const pair = type === 'rsa' ? crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }) : crypto.generateKeyPairSync('ed25519');
  dns.set(`${selector}._domainkey.${DOMAIN}`, [{ type: 'TXT', data: dkimTxtRecord(pair.publicKey) }]);
  return pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
}

const MESSAGES: Record<string, string> = {
  'a plain message': 'From: a@shop.test\r\nTo: b@dest.test\r\nSubject: hi\r\n\r\nHello\r\n',
  'long and folded headers with trailing whitespace': `From: Shop <a@shop.test>\r\nTo: b@dest.test,\r\n\t c@dest.test  \r\nSubject:   a   long\r\n  folded\tsubject \t\r\nReferences: ${Array.from({ length: 40 }, (_, i) => `<ref${i}@shop.test>`).join('\r\n ')}\r\n\r\nHello  \t world \r\n`,
  'an empty body': 'From: a@shop.test\r\nTo: b@dest.test\r\nSubject: hi\r\n\r\n',
  'a body of blank and whitespace-only lines at the end': 'From: a@shop.test\r\nSubject: s\r\n\r\ntext\r\n   \r\n\t\r\n\r\n\r\n',
  'bare LF line ends': 'From: a@shop.test\nTo: b@dest.test\nSubject: hi\n\nline one  \nline two\n\n',
  '8-bit content in headers and body': 'From: Jörg <a@shop.test>\r\nTo: b@dest.test\r\nSubject: Grüße\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\nGrüße aus Köln — ✓\r\n',
  'repeated header fields': 'From: a@shop.test\r\nTo: b@dest.test\r\nTo: c@dest.test\r\nSubject: one\r\nSubject: two\r\n\r\nx\r\n',
  'one-click unsubscribe headers': 'From: a@shop.test\r\nTo: b@dest.test\r\nSubject: s\r\nList-Unsubscribe: <https://u.test/x>\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n\r\nx\r\n',
  // raw MIME relayed over SMTP may end with its headers: the signed bytes gain the blank line that ends them
  'headers and no blank line after them': 'From: a@shop.test\r\nTo: b@dest.test\r\nSubject: headers only\r\n',
  'headers without a final line end': 'From: a@shop.test\r\nTo: b@dest.test\r\nSubject: headers only',
};

/** What the receiver sees: SMTP transmission turns every line end into CRLF. */
const asTransmitted = (raw: Buffer) => Buffer.from(raw.toString('latin1').replace(/\r?\n/g, '\r\n'), 'latin1');

describe('DKIM signing', () => {
  let dns: TestDnsServer;
  let rsa: SigningKey;
  let both: SigningKey;
  before(async () => {
    dns = await startDnsServer();
    rsa = { domain: DOMAIN, selector: 'rsa1', algorithm: 'rsa', privateKeyPem: publish(dns, 'rsa1', 'rsa') };
    both = { ...rsa, ed25519: { selector: 'ed1', privateKeyPem: publish(dns, 'ed1', 'ed25519') } };
  });
  after(() => dns.close());

  for (const [name, text] of Object.entries(MESSAGES)) {
    it(`${name}: the RSA and the Ed25519 signature both verify`, async () => {
      const signed = await signMessage(Buffer.from(text), both, NOW);
      assert.ok('raw' in signed, JSON.stringify(signed));
      const results = await verifyDkim(asTransmitted(signed.raw), dns.address);
      assert.deepEqual(results.map((r) => [r.selector, r.algo, r.result]), [['ed1', 'ed25519-sha256', 'pass'], ['rsa1', 'rsa-sha256', 'pass']], JSON.stringify(results));
      assert.equal(signed.note, `d=${DOMAIN} s=rsa1 a=rsa-sha256, s=ed1 a=ed25519-sha256`);
    });
  }

  it('a key without an Ed25519 companion makes one signature', async () => {
    const signed = await signMessage(Buffer.from(MESSAGES['a plain message']), rsa, NOW);
    assert.ok('raw' in signed);
    const results = await verifyDkim(signed.raw, dns.address);
    assert.deepEqual(results.map((r) => [r.selector, r.result]), [['rsa1', 'pass']]);
  });

  it('signs List-Unsubscribe-Post, so a relay cannot add or change one-click unsubscribe unseen', async () => {
    const signed = await signMessage(Buffer.from(MESSAGES['one-click unsubscribe headers']), rsa, NOW);
    assert.ok('raw' in signed);
    assert.match(signed.raw.toString(), /h=[^;]*List-Unsubscribe-Post:List-Unsubscribe:/);
    const tampered = Buffer.from(signed.raw.toString().replace('List-Unsubscribe=One-Click', 'List-Unsubscribe=Two-Click'));
    assert.equal((await verifyDkim(tampered, dns.address))[0].result, 'fail');
  });

  it('a changed body no longer verifies', async () => {
    const signed = await signMessage(Buffer.from(MESSAGES['a plain message']), rsa, NOW);
    assert.ok('raw' in signed);
    const results = await verifyDkim(Buffer.from(signed.raw.toString().replace('Hello', 'Hullo')), dns.address);
    assert.notEqual(results[0].result, 'pass');
  });

  it('a key that is not a key is an error, not a throw', async () => {
    const signed = await signMessage(Buffer.from(MESSAGES['a plain message']), { ...rsa, privateKeyPem: 'not a pem' }, NOW);
    assert.ok('error' in signed);
  });

  it('worker threads sign exactly as the main thread does, and a killed worker is replaced', async () => {
    const signer = createSigner(2);
    try {
      const raw = Buffer.from(MESSAGES['8-bit content in headers and body']);
      const results = await Promise.all(Array.from({ length: 8 }, () => signer.sign(raw, both, NOW)));
      const direct = await signMessage(raw, both, NOW);
      assert.ok('raw' in direct);
      for (const r of results) assert.ok('raw' in r && r.raw.equals(direct.raw));
      // Ed25519 and RSA PKCS#1 v1.5 are deterministic, so equal bytes mean equal signatures.
      await signer.close(); // the workers exit; the next signature starts new ones
      const again = await signer.sign(raw, both, NOW);
      assert.ok('raw' in again && again.raw.equals(direct.raw));
    } finally {
      await signer.close();
    }
  });

  it('signing threads run below the main thread\'s priority, and the main thread keeps its own', { skip: process.platform !== 'linux' }, async () => {
    const mainNice = os.getPriority(0);
    const helperNice = Math.min(19, mainNice + HELPER_THREAD_NICE);
    const lowered = () => threadNices().filter(([tid, nice]) => tid !== process.pid && nice === helperNice).length;
    const before = lowered();
    const signer = createSigner(2);
    try {
      await Promise.all(Array.from({ length: 4 }, () => signer.sign(Buffer.from(MESSAGES['8-bit content in headers and body']), both, NOW)));
      if (helperNice > mainNice) assert.equal(lowered(), before + 2); // a process already at 19 cannot go lower
      assert.equal(os.getPriority(0), mainNice);
    } finally {
      await signer.close();
    }
  });
});

/** [thread id, nice] of each thread of this process (/proc/self/task/<tid>/stat: nice is the 19th field). */
function threadNices(): Array<[number, number]> {
  return fs.readdirSync('/proc/self/task').map((tid) => {
    const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return [Number(tid), Number(fields[16])];
  });
}
