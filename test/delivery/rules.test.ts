// Pure parts of the MTA: bounce rules, reply parsing, retry schedule, VERP tokens.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createClassifier, parseReply } from '../../src/delivery/classify';
import { baseDelayMs, nextAttemptAt } from '../../src/delivery/retry';
import { parseVerp, verpAddress } from '../../src/delivery/verp';
import { parseConfig } from '../../src/config';
import { checkSourceAddresses } from '../../src/delivery/doctor';
import { signMessage } from '../../src/delivery/dkim';
import { tempDir } from '../support/temp-dir';

describe('bounce rules', () => {
  const classify = createClassifier('');
  const bounce = (response: string) => {
    const c = classify(parseReply(response));
    return `${c.type} ${c.category}`;
  };

  it('sorts common 5xx replies into type and category', () => {
    assert.equal(bounce('550 5.1.1 <a@b.test>: Recipient address rejected: User unknown'), 'hard invalid_recipient');
    assert.equal(bounce('550 5.2.2 The email account that you tried to reach is over quota'), 'soft mailbox_full');
    assert.equal(bounce('552 5.2.2 Mailbox full'), 'soft mailbox_full');
    assert.equal(bounce('554 5.7.1 Service unavailable; Client host [192.0.2.1] blocked using zen.spamhaus.org'), 'soft spam_block');
    assert.equal(bounce('550 5.7.26 Unauthenticated email from example.test is not accepted due to its DMARC policy'), 'soft policy');
    assert.equal(bounce('550 5.7.1 Relaying denied'), 'soft policy');
    assert.equal(bounce('556 5.1.10 Recipient address has null MX'), 'hard dns');
    assert.equal(bounce('550 No such user here'), 'hard invalid_recipient');
    assert.equal(bounce('554 Transaction failed'), 'hard other');
  });

  it('reads multi-line replies', () => {
    const reply = parseReply('550-5.1.1 The email account that you tried to reach does not exist.\n550 5.1.1 Please try again.');
    assert.deepEqual([reply.code, reply.enhancedCode], [550, '5.1.1']);
    assert.equal(parseReply('250 OK: queued as 12345').enhancedCode, null);
  });

  it('tries the rules of delivery.bounceRulesFile before the built-in ones', () => {
    const file = path.join(tempDir('rules'), 'rules.json');
    fs.writeFileSync(file, JSON.stringify({ rules: [{ text: 'transaction failed', type: 'soft', category: 'policy' }] }));
    const custom = createClassifier(file);
    assert.deepEqual(custom(parseReply('554 Transaction failed')), { type: 'soft', category: 'policy', suppress: false });
    assert.equal(custom(parseReply('550 5.1.1 unknown')).type, 'hard');
    fs.writeFileSync(file, JSON.stringify({ rules: [{ text: 'x', type: 'maybe', category: 'policy' }] }));
    assert.throws(() => createClassifier(file), /rules\.0\.type/);
  });
});

describe('retry schedule', () => {
  it('is 1 m, 5 m, 15 m, 30 m, 1 h, 2 h, then every 4 h', () => {
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7, 8, 20].map((n) => baseDelayMs(n) / 60_000), [1, 5, 15, 30, 60, 120, 240, 240, 240]);
  });

  it('jitters by at most 10 % and never passes the deadline', () => {
    const now = 1_000_000;
    assert.equal(nextAttemptAt({ now, deferrals: 1, deadline: now + 1e9, random: () => 0 }), now + 54_000);
    assert.equal(nextAttemptAt({ now, deferrals: 1, deadline: now + 1e9, random: () => 1 }), now + 66_000);
    assert.equal(nextAttemptAt({ now, deferrals: 7, deadline: now + 1000 }), now + 1000);
    assert.equal(nextAttemptAt({ now, deferrals: 7, deadline: now }), null);
  });
});

describe('VERP return-path', () => {
  const dataDir = tempDir('verp');
  const config = parseConfig({ dataDir, hostname: 'mail.pigeon.test', delivery: { bounceDomain: 'bounces.pigeon.test' } });
  const id = 'msg_01kaxyz0123456789abcdefghj';

  it('round-trips a message id, case-insensitively, on the bounce domain', () => {
    const address = verpAddress(config, id);
    assert.match(address, /^b\+msg_01kaxyz0123456789abcdefghj-[0-9a-f]{16}@bounces\.pigeon\.test$/);
    assert.equal(parseVerp(config, address), id);
    assert.equal(parseVerp(config, address.toUpperCase()), id);
    assert.equal(fs.statSync(path.join(dataDir, 'secret.key')).mode & 0o777, 0o600);
  });

  it('rejects a forged tag, another domain and foreign addresses', () => {
    const address = verpAddress(config, id);
    const forged = address.replace(/-([0-9a-f])/, (_m, c: string) => `-${c === '0' ? '1' : '0'}`);
    assert.equal(parseVerp(config, forged), null);
    assert.equal(parseVerp(config, verpAddress(config, id).replace('bounces.pigeon.test', 'evil.test')), null);
    assert.equal(parseVerp(config, 'postmaster@bounces.pigeon.test'), null);
    const otherDir = tempDir('verp');
    assert.equal(parseVerp({ ...config, dataDir: otherDir }, address), null, 'another appliance cannot validate our tokens');
  });
});

describe('pigeon doctor: source addresses', () => {
  it('fails an address in "ips" that this host does not have', async () => {
    const config = parseConfig({ ips: [{ address: '127.0.0.1', hostname: 'out1.test' }, { address: '192.0.2.7', hostname: 'out2.test' }] });
    const results = await checkSourceAddresses(config);
    assert.deepEqual(results.map((r) => [r.name, r.status]), [['source address 127.0.0.1', 'ok'], ['source address 192.0.2.7', 'fail']]);
    assert.match(results[1].detail, /not an address of this host/);
  });
});

describe('DKIM signer', () => {
  it('parses a private key once, not for every signature', async () => {
    const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    const key = { domain: 'sender.test', selector: 's1', algorithm: 'rsa' as const, privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
    const raw = Buffer.from('From: a@sender.test\r\nTo: b@dest.test\r\nSubject: hi\r\n\r\nHello.\r\n');
    const parse = crypto.createPrivateKey;
    let parses = 0;
    crypto.createPrivateKey = ((...args: Parameters<typeof parse>) => (parses++, parse(...args))) as typeof parse;
    try {
      const signed = await Promise.all([1, 2, 3].map((i) => signMessage(raw, key, Date.UTC(2026, 0, 5, 9, 0, i))));
      for (const s of signed) assert.match('raw' in s ? s.raw.toString() : s.error, /^DKIM-Signature: v=1; a=rsa-sha256; c=relaxed\/relaxed; d=sender.test;[^]*s=s1;/);
      assert.equal(parses, 1);
    } finally {
      crypto.createPrivateKey = parse;
    }
  });
});
