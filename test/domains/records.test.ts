// The records we ask for and how they print as zone-file lines.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../src/config';
import { spfValue, txtStrings, zoneLine } from '../../src/domains/records';
import { dmarcProblem, parseTags } from '../../src/domains/checks';

describe('domain records', () => {
  it('SPF lists each configured IP once, or the configured include instead', () => {
    const ips = [
      { address: '192.0.2.1', hostname: 'a.test' },
      { address: '192.0.2.1', hostname: 'a.test' },
      { address: '2001:db8::1', hostname: 'b.test' },
    ];
    assert.equal(spfValue(parseConfig({ ips })), 'v=spf1 ip4:192.0.2.1 ip6:2001:db8::1 ~all');
    assert.equal(spfValue(parseConfig({ ips, domains: { spfInclude: '_spf.mail.example.com' } })), 'v=spf1 include:_spf.mail.example.com ~all');
  });

  it('a long TXT value prints as 255-character strings of one record', () => {
    const value = `v=DKIM1; k=rsa; p=${'A'.repeat(392)}`;
    const line = zoneLine({ type: 'TXT', host: 'pg202601abcd._domainkey.example.com', value });
    const strings = [...line.matchAll(/"([^"]*)"/g)].map((m) => m[1]);
    assert.ok(line.startsWith('pg202601abcd._domainkey.example.com. 3600 IN TXT "v=DKIM1; k=rsa; p=AAA'));
    assert.deepEqual(strings.map((s) => s.length), [255, value.length - 255]);
    assert.equal(strings.join(''), value);
    assert.deepEqual(txtStrings('short'), ['short']);
    assert.equal(zoneLine({ type: 'CNAME', host: 'bounces.example.com', value: 'mail.pigeon.test' }), 'bounces.example.com. 3600 IN CNAME mail.pigeon.test.');
    assert.equal(zoneLine({ type: 'TXT', host: 'x.test', value: 'say "hi"' }), 'x.test. 3600 IN TXT "say \\"hi\\""');
  });

  it('tags parse leniently; DMARC must start with v=DMARC1 and carry a valid p=', () => {
    assert.deepEqual([...parseTags(' V = DKIM1 ;k=rsa; p= AB CD ;;junk')], [['v', 'DKIM1'], ['k', 'rsa'], ['p', 'AB CD']]);
    assert.equal(dmarcProblem('v=DMARC1; p=none; rua=mailto:d@example.com'), null);
    assert.equal(dmarcProblem('v=DMARC1;p=REJECT;pct=100'), null);
    assert.match(dmarcProblem('v=DMARC1; rua=mailto:d@example.com') ?? '', /p= is missing/);
    assert.match(dmarcProblem('v=DMARC1; p=none; sp=all') ?? '', /sp=all/);
    assert.match(dmarcProblem('v=DMARC1; p=none; pct=101') ?? '', /pct=101/);
    assert.match(dmarcProblem('v=DMARC1; p=none; aspf=x') ?? '', /aspf=x/);
    assert.match(dmarcProblem('v=dmarc1; p=none') ?? '', /first tag/);
  });
});
