// Provider recognition by MX host names and the throttling-reply rules, as data.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createProviderMatcher } from '../../src/pools/providers';
import { createThrottleMatcher } from '../../src/pools/throttle-rules';
import { allowanceOpensAt, hourlyAllowance, rollForward, STANDARD_SCHEDULE } from '../../src/pools/schedule';
import { tempDir } from '../support/temp-dir';

describe('provider recognition', () => {
  const { of, ids } = createProviderMatcher();

  it('recognises the big four by their MX hosts, in preference order, and nothing else', () => {
    assert.deepEqual(ids, ['gmail', 'microsoft', 'yahoo', 'apple']);
    const cases: Array<[string[], string | null]> = [
      [['gmail-smtp-in.l.google.com', 'alt1.gmail-smtp-in.l.google.com'], 'gmail'],
      [['ASPMX.L.GOOGLE.COM.'], 'gmail'],
      [['aspmx2.googlemail.com'], 'gmail'],
      [['example-com.mail.protection.outlook.com'], 'microsoft'],
      [['hotmail-com.olc.protection.outlook.com'], 'microsoft'],
      [['mx1.hotmail.com'], 'microsoft'],
      [['mta5.am0.yahoodns.net', 'mta6.am0.yahoodns.net'], 'yahoo'],
      [['mx01.mail.icloud.com'], 'apple'],
      [['mx1.mail.me.com'], 'apple'],
      [['mx.example.com', 'aspmx.l.google.com'], 'gmail'],
      [['mx.example.com'], null],
      [['google.com.evil.test'], null],
      [['notgoogle.com'], null],
      [['google.com'], null],
      [[], null],
    ];
    for (const [hosts, expected] of cases) assert.equal(of(hosts), expected, hosts.join(','));
  });

  it('a sysadmin file adds providers and is tried first', () => {
    const file = path.join(tempDir('mx'), 'mx.json');
    fs.writeFileSync(file, JSON.stringify({ providers: [{ id: 'fastmail', mx: ['*.messagingengine.com'] }, { id: 'corp-google', mx: ['aspmx.l.google.com'] }] }));
    const m = createProviderMatcher(file);
    assert.equal(m.of(['in1-smtp.messagingengine.com']), 'fastmail');
    assert.equal(m.of(['aspmx.l.google.com']), 'corp-google');
    assert.equal(m.of(['alt1.aspmx.l.google.com']), 'gmail');
    fs.writeFileSync(file, JSON.stringify({ providers: [{ id: 'other', mx: ['x'] }] }));
    assert.throws(() => createProviderMatcher(file), /reserved/);
  });
});

describe('throttling replies', () => {
  const match = createThrottleMatcher();

  it('recognises rate limits and reputation replies, including the big providers\' own codes', () => {
    const cases: Array<[number, string | null, string, string | null]> = [
      [421, '4.7.28', '421-4.7.28 Gmail has detected an unusual rate of unsolicited mail originating from your IP address', 'rate_limited'],
      [550, '5.7.1', '550 5.7.1 Unfortunately, messages from [192.0.2.1] weren\'t sent. Please contact your Internet service provider since part of their network is on our block list (S3150).', 'reputation'],
      [451, '4.7.650', '451 4.7.650 The mail server [192.0.2.1] has been temporarily rate limited due to IP reputation.', 'reputation'],
      [421, '4.7.0', '421 4.7.0 [TSS04] Messages from 192.0.2.1 temporarily deferred due to unexpected volume or user complaints', 'rate_limited'],
      [450, '4.2.1', '450 4.2.1 The user you are trying to contact is receiving mail at a rate that prevents additional messages', null],
      [451, null, '451 Too many messages from your IP, slow down', 'rate_limited'],
      [421, null, '421 Rate limit exceeded, try again later', 'rate_limited'],
      [450, null, '450 please try again later', 'rate_limited'],
      [554, null, '554 Your IP has a poor reputation', 'reputation'],
      [451, '4.7.1', '451 4.7.1 Greylisted, please try again later', null],
      [450, '4.2.0', '450 4.2.0 <a@b.test>: Recipient address rejected: Greylisting in action', null],
      [550, '5.1.1', '550 5.1.1 no such user', null],
      [250, null, '250 ok: queued as 1234 too many', null],
      [null as unknown as number, null, 'ETIMEDOUT: rate limit', null],
    ];
    for (const [code, enhancedCode, response, expected] of cases) {
      assert.equal(match({ code: code ?? null, enhancedCode, response }), expected, response);
    }
  });
});

describe('the warm-up schedule', () => {
  it('the standard schedule starts at 50 and roughly doubles every two days to 500,000 on day 30', () => {
    assert.equal(STANDARD_SCHEDULE.length, 30);
    assert.equal(STANDARD_SCHEDULE[0], 50);
    assert.equal(STANDARD_SCHEDULE[29], 500_000);
    for (let d = 1; d < 30; d++) assert.ok(STANDARD_SCHEDULE[d] > STANDARD_SCHEDULE[d - 1] && STANDARD_SCHEDULE[d] <= 2 * STANDARD_SCHEDULE[d - 1]);
  });

  it('the hourly allowance is cap × (h+1) / 24 and the next opening is the first hour it exceeds what was used', () => {
    const day = Date.UTC(2026, 0, 1);
    assert.deepEqual([0, 1, 11, 23].map((h) => hourlyAllowance(50, day + h * 3_600_000 + 59_000)), [2, 4, 25, 50]);
    assert.equal(allowanceOpensAt(50, 2, day + 600_000), day + 3_600_000);
    assert.equal(allowanceOpensAt(50, 4, day + 600_000), day + 2 * 3_600_000);
    assert.equal(allowanceOpensAt(50, 50, day + 23 * 3_600_000), day + 86_400_000);
    assert.equal(allowanceOpensAt(5, 0, day), day + 4 * 3_600_000, 'floor(5 × 5/24) = 1 at hour 4');
  });

  it('moves on a day only from a sending day that used half its cap', () => {
    const w = { status: 'warming' as const, schedule: [10, 20], dayIndex: 0, dayDate: '2026-01-01' };
    assert.equal(rollForward(w, '2026-01-01', 0), w);
    assert.deepEqual(rollForward(w, '2026-01-05', 5), { ...w, dayIndex: 1, dayDate: '2026-01-05' });
    assert.deepEqual(rollForward(w, '2026-01-02', 4), { ...w, dayDate: '2026-01-02' });
    assert.deepEqual(rollForward({ ...w, dayIndex: 1 }, '2026-01-02', 10), { ...w, status: 'warm', dayIndex: 2, dayDate: '2026-01-02' });
    assert.deepEqual(rollForward({ ...w, status: 'paused' }, '2026-01-02', 10), { ...w, status: 'paused', dayDate: '2026-01-02' });
    assert.deepEqual(rollForward({ ...w, dayDate: null }, '2026-01-02', 0), { ...w, dayDate: '2026-01-02' });
  });
});
