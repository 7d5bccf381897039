// Verification against records served by a real DNS server on loopback, looked up through dns.servers.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { getReturnPathDomain, isVerifiedDomain } from '../../src/domains/lookup';
import { startTestApp, type TestApp } from '../support/app';
import { startDnsServer, type TestDnsServer } from '../support/dns-server';
import { addDomain, chunks, publish, record, verify } from './helpers';

describe('domain verification through DNS', () => {
  let dns: TestDnsServer;
  let app: TestApp;

  before(async () => {
    dns = await startDnsServer();
    // 127.0.0.1 is the sending IP of the default config; a short DNS timeout keeps the slow-DNS case quick.
    app = await startTestApp({ dns: { servers: [dns.address] }, domains: { dnsTimeoutMs: 150 }, hostname: 'mta.pigeon.test' });
  });
  after(async () => {
    await app.stop();
    await dns.close();
  });

  it('all records published: every record verified and the domain verified', async () => {
    const added = await addDomain(app.api, 'all-good.test');
    assert.equal(added.status, 'pending');
    publish(dns, added);
    const d = await verify(app.api, 'all-good.test');
    assert.equal(d.status, 'verified');
    assert.ok(d.verified_at);
    assert.ok(d.last_checked_at);
    for (const r of d.dns_records) assert.equal(r.state, 'verified', `${r.purpose}: ${r.detail}`);
    assert.equal(record(d, 'return_path').value, 'mta.pigeon.test');
    const events = await app.db('domain_events').where({ domain: 'all-good.test' });
    assert.deepEqual(events.map((e) => e.type), ['domain.verified']);
    const accountId = (await app.api.get('/v1/account')).body.id;
    assert.equal(await isVerifiedDomain(app.db, accountId, 'All-Good.test'), true);
    assert.equal(await isVerifiedDomain(app.db, accountId, 'sub.all-good.test'), false, 'a subdomain is not verified by its parent');
    assert.equal(await getReturnPathDomain(app.db, accountId, 'all-good.test', 'bounces'), 'bounces.all-good.test');
  });

  it('DKIM published as split strings, with whitespace and stray quotes, still verifies', async () => {
    const added = await addDomain(app.api, 'split.test');
    publish(dns, added, ['dkim']);
    const dkim = record(added, 'dkim');
    const p = dkim.value.split('p=')[1];
    // uneven chunks, a space inside the key and the quotes a DNS panel sometimes keeps
    dns.set(dkim.host, [{ type: 'TXT', data: ['"v=DKIM1; k=rsa;', ` p=${p.slice(0, 100)} `, `${p.slice(100, 300)}"`, p.slice(300)] }]);
    const d = await verify(app.api, 'split.test');
    assert.equal(record(d, 'dkim').state, 'verified', record(d, 'dkim').detail ?? '');
    assert.equal(d.status, 'verified');
  });

  it('a DKIM record with another public key is a mismatch showing what was found', async () => {
    const added = await addDomain(app.api, 'wrong-dkim.test');
    publish(dns, added, ['dkim']);
    const other = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
    const host = record(added, 'dkim').host;
    dns.set(host, [{ type: 'TXT', data: chunks(`v=DKIM1; k=rsa; p=${other}`) }]);
    const d = await verify(app.api, 'wrong-dkim.test');
    const dkim = record(d, 'dkim');
    assert.equal(dkim.state, 'mismatch');
    assert.match(dkim.detail ?? '', /different public key/);
    assert.deepEqual(dkim.found, [`v=DKIM1; k=rsa; p=${other}`]);
    assert.equal(d.status, 'pending');
  });

  it('a missing DKIM record is missing and keeps the domain pending', async () => {
    const added = await addDomain(app.api, 'no-dkim.test');
    publish(dns, added, ['dkim']);
    const d = await verify(app.api, 'no-dkim.test');
    assert.equal(record(d, 'dkim').state, 'missing');
    assert.deepEqual(record(d, 'dkim').found, []);
    assert.equal(d.status, 'pending');
  });

  it('SPF through an include (and a redirect) verifies', async () => {
    const added = await addDomain(app.api, 'spf-include.test');
    publish(dns, added, ['spf']);
    dns.set('spf-include.test', [{ type: 'TXT', data: 'v=spf1 include:_spf.provider.test -all' }]);
    dns.set('_spf.provider.test', [{ type: 'TXT', data: 'v=spf1 redirect=_spf2.provider.test' }]);
    dns.set('_spf2.provider.test', [{ type: 'TXT', data: 'v=spf1 ip4:127.0.0.0/8 -all' }]);
    const d = await verify(app.api, 'spf-include.test');
    assert.equal(record(d, 'spf').state, 'verified', record(d, 'spf').detail ?? '');
    assert.equal(d.status, 'verified');
  });

  it('SPF that does not list the sending IP is a mismatch naming softfail', async () => {
    const added = await addDomain(app.api, 'spf-soft.test');
    publish(dns, added, ['spf']);
    dns.set('spf-soft.test', [{ type: 'TXT', data: 'v=spf1 ip4:192.0.2.1 ~all' }, { type: 'TXT', data: 'google-site-verification=abc' }]);
    const d = await verify(app.api, 'spf-soft.test');
    const spf = record(d, 'spf');
    assert.equal(spf.state, 'mismatch');
    assert.match(spf.detail ?? '', /softfail for 127\.0\.0\.1/);
    assert.deepEqual(spf.found, ['v=spf1 ip4:192.0.2.1 ~all']);
    assert.equal(d.status, 'pending');
  });

  it('SPF with -all is a mismatch naming fail, and a broken record names permerror', async () => {
    const added = await addDomain(app.api, 'spf-fail.test');
    publish(dns, added, ['spf']);
    dns.set('spf-fail.test', [{ type: 'TXT', data: 'v=spf1 -all' }]);
    assert.match(record(await verify(app.api, 'spf-fail.test'), 'spf').detail ?? '', /SPF fail for/);
    dns.set('spf-fail.test', [{ type: 'TXT', data: 'v=spf1 ip4:300.1.1.1 ~all' }]);
    const spf = record(await verify(app.api, 'spf-fail.test'), 'spf');
    assert.equal(spf.state, 'mismatch');
    assert.match(spf.detail ?? '', /permerror/);
  });

  it('no SPF record at all is missing', async () => {
    const added = await addDomain(app.api, 'spf-none.test');
    publish(dns, added, ['spf']);
    const d = await verify(app.api, 'spf-none.test');
    assert.equal(record(d, 'spf').state, 'missing');
    assert.match(record(d, 'spf').detail ?? '', /SPF none/);
    assert.equal(d.status, 'pending');
  });

  it('DMARC missing is reported but does not block verification', async () => {
    const added = await addDomain(app.api, 'no-dmarc.test');
    publish(dns, added, ['dmarc']);
    const d = await verify(app.api, 'no-dmarc.test');
    assert.equal(record(d, 'dmarc').state, 'missing');
    assert.equal(d.status, 'verified');
  });

  it('a malformed DMARC record is a mismatch saying what is wrong', async () => {
    const added = await addDomain(app.api, 'bad-dmarc.test');
    publish(dns, added, ['dmarc']);
    dns.set('_dmarc.bad-dmarc.test', [{ type: 'TXT', data: 'v=DMARC1; p=maybe' }]);
    let dmarc = record(await verify(app.api, 'bad-dmarc.test'), 'dmarc');
    assert.equal(dmarc.state, 'mismatch');
    assert.match(dmarc.detail ?? '', /p=maybe/);
    assert.deepEqual(dmarc.found, ['v=DMARC1; p=maybe']);
    dns.set('_dmarc.bad-dmarc.test', [{ type: 'TXT', data: 'p=reject; v=DMARC1' }]);
    dmarc = record(await verify(app.api, 'bad-dmarc.test'), 'dmarc');
    assert.match(dmarc.detail ?? '', /first tag/);
    dns.set('_dmarc.bad-dmarc.test', [{ type: 'TXT', data: 'v=DMARC1; p=reject; adkim=s' }]);
    assert.equal(record(await verify(app.api, 'bad-dmarc.test'), 'dmarc').state, 'verified');
  });

  it('a subdomain inherits the DMARC record of its parent', async () => {
    const added = await addDomain(app.api, 'mail.parent.test');
    publish(dns, added, ['dmarc']);
    dns.set('_dmarc.parent.test', [{ type: 'TXT', data: 'v=DMARC1; p=quarantine' }]);
    const dmarc = record(await verify(app.api, 'mail.parent.test'), 'dmarc');
    assert.equal(dmarc.state, 'verified');
    assert.match(dmarc.detail ?? '', /inherited from _dmarc\.parent\.test/);
  });

  it('a DNS timeout answers 200 with temporary_error on that record', async () => {
    const added = await addDomain(app.api, 'slow.test');
    publish(dns, added);
    const dkim = record(added, 'dkim');
    dns.set(dkim.host, { delayMs: 10_000, records: [{ type: 'TXT', data: chunks(dkim.value) }] });
    const res = await app.api.post('/v1/domains/slow.test/verify');
    assert.equal(res.status, 200);
    assert.equal(record(res.body, 'dkim').state, 'temporary_error');
    assert.match(record(res.body, 'dkim').detail ?? '', /temporarily/);
    assert.equal(record(res.body, 'spf').state, 'verified');
    assert.equal(res.body.status, 'pending');
  });

  it('SERVFAIL on the SPF lookup is a temporary_error, not a 500', async () => {
    const added = await addDomain(app.api, 'servfail.test');
    publish(dns, added, ['spf']);
    dns.set('servfail.test', 'SERVFAIL');
    const res = await app.api.post('/v1/domains/servfail.test/verify');
    assert.equal(res.status, 200);
    assert.equal(record(res.body, 'spf').state, 'temporary_error');
  });

  it('a return-path CNAME to another host is a mismatch; it is optional for verification', async () => {
    const added = await addDomain(app.api, 'rp.test');
    publish(dns, added, ['return_path']);
    dns.set('bounces.rp.test', [{ type: 'CNAME', data: 'elsewhere.test' }]);
    dns.set('elsewhere.test', [{ type: 'A', data: '192.0.2.9' }]);
    const d = await verify(app.api, 'rp.test');
    assert.equal(record(d, 'return_path').state, 'mismatch');
    assert.deepEqual(record(d, 'return_path').found, ['CNAME elsewhere.test']);
    assert.equal(d.status, 'verified');
    const accountId = (await app.api.get('/v1/account')).body.id;
    assert.equal(await getReturnPathDomain(app.db, accountId, 'rp.test', 'bounces'), null);
  });

  it('verify of a domain the account does not have is 404', async () => {
    const res = await app.api.post('/v1/domains/unknown.test/verify');
    assert.equal(res.status, 404);
    assert.equal(res.body.error.code, 'not_found');
  });
});
