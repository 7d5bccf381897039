// The optional Ed25519 second key of a domain: its record (k=ed25519), its verification, and the API's refusals.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { getSigningKey } from '../../src/domains/signing';
import { liveApi, startTestApp, type ApiClient, type TestApp } from '../support/app';
import { startDnsServer, type TestDnsServer } from '../support/dns-server';
import { addDomain, chunks, publish, verify, type DomainBody } from './helpers';

const edRecord = (d: DomainBody) => d.dns_records.find((r) => r.purpose === 'dkim' && r.key_role === 'second');

describe('Ed25519 second DKIM key', () => {
  let dns: TestDnsServer;
  let app: TestApp;
  let live: ApiClient;

  before(async () => {
    dns = await startDnsServer();
    app = await startTestApp({ dns: { servers: [dns.address] }, domains: { dnsTimeoutMs: 150 }, hostname: 'mta.pigeon.test' });
    live = await liveApi(app, ['domains:manage']);
  });
  after(async () => {
    await app.stop();
    await dns.close();
  });

  it('POST /v1/domains with dkim_ed25519 asks for two DKIM records, and the domain verifies only once both are published', async () => {
    const added = (await addDomain(app.api, 'two-sigs.test', { dkim_ed25519: true })) as DomainBody;
    assert.equal(added.dkim?.algorithm, 'rsa');
    assert.equal(added.dkim_ed25519?.status, 'active');
    const ed = edRecord(added)!;
    assert.equal(ed.host, `${added.dkim_ed25519!.selector}._domainkey.two-sigs.test`);
    assert.match(ed.value, /^v=DKIM1; k=ed25519; p=[A-Za-z0-9+/]{43}=$/);
    assert.equal(ed.required, true);

    publish(dns, { ...added, dns_records: added.dns_records.filter((r) => r !== ed) });
    const half = (await verify(app.api, 'two-sigs.test')) as DomainBody;
    assert.equal(half.status, 'pending');
    assert.equal(edRecord(half)!.state, 'missing');

    publish(dns, added);
    assert.equal((await verify(app.api, 'two-sigs.test')).status, 'verified');
    const accountId = (await app.api.get('/v1/account')).body.id;
    const key = await getSigningKey(app.db, app.config.dataDir, accountId, 'two-sigs.test');
    assert.equal(key?.ed25519?.selector, added.dkim_ed25519!.selector);
    assert.match(key!.ed25519!.privateKeyPem, /^-----BEGIN PRIVATE KEY-----/);
  });

  it('an Ed25519 key added to a verified domain waits for its record and leaves the domain verified meanwhile', async () => {
    const added = await addDomain(app.api, 'later.test');
    publish(dns, added);
    await verify(app.api, 'later.test');
    const res = await live.post('/v1/domains/later.test/dkim/ed25519');
    assert.equal(res.status, 200, res.text);
    const body = res.body as DomainBody;
    assert.equal(body.dkim_ed25519?.status, 'pending');
    assert.equal(edRecord(body)!.required, false);
    const accountId = (await app.api.get('/v1/account')).body.id;
    assert.equal((await getSigningKey(app.db, app.config.dataDir, accountId, 'later.test'))?.ed25519, undefined, 'a pending key does not sign');

    const unpublished = (await verify(app.api, 'later.test')) as DomainBody;
    assert.equal(unpublished.status, 'verified', 'a missing record of a pending key does not fail the domain');

    dns.set(edRecord(body)!.host, [{ type: 'TXT', data: chunks(edRecord(body)!.value) }]);
    const promoted = (await verify(app.api, 'later.test')) as DomainBody;
    assert.equal(promoted.dkim_ed25519?.status, 'active');
    const rotated = await app.db('domain_events').where({ domain: 'later.test', type: 'domain.dkim_rotated' }).first();
    assert.deepEqual(JSON.parse(rotated.data).key_role, 'second');
    assert.equal((await getSigningKey(app.db, app.config.dataDir, accountId, 'later.test'))?.ed25519?.selector, promoted.dkim_ed25519?.selector);

    dns.remove(edRecord(body)!.host);
    assert.equal((await verify(app.api, 'later.test')).status, 'failing', 'an active Ed25519 key whose record disappeared fails the domain');
  });

  it('refuses what makes no sense: dkim_ed25519 on an Ed25519 domain (422), a second Ed25519 key (409), rotating or removing a key that is not there (404)', async () => {
    const both = await app.api.post('/v1/domains', { name: 'ed-only.test', dkim_algorithm: 'ed25519', dkim_ed25519: true });
    assert.equal(both.status, 422, both.text);
    assert.equal(both.body.error.code, 'invalid_dkim');
    assert.equal((await app.db('domains').where({ name: 'ed-only.test' })).length, 0, 'nothing written');

    await addDomain(app.api, 'ed-only.test', { dkim_algorithm: 'ed25519' });
    const onEd = await live.post('/v1/domains/ed-only.test/dkim/ed25519');
    assert.equal(onEd.status, 409);
    assert.equal(onEd.body.error.code, 'dkim_ed25519_primary');

    await addDomain(app.api, 'once.test', { dkim_ed25519: true });
    const again = await live.post('/v1/domains/once.test/dkim/ed25519');
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, 'dkim_ed25519_exists');

    await addDomain(app.api, 'none.test');
    assert.equal((await live.post('/v1/domains/none.test/dkim/ed25519/rotate')).status, 404);
    assert.equal((await live.delete('/v1/domains/none.test/dkim/ed25519')).status, 404);
    assert.equal((await live.post('/v1/domains/nowhere.test/dkim/ed25519')).status, 404);
  });

  it('a sandbox key cannot add, rotate or remove the Ed25519 key that signs live mail', async () => {
    await addDomain(app.api, 'guarded.test', { dkim_ed25519: true });
    for (const res of [
      await app.api.post('/v1/domains/guarded.test/dkim/ed25519'),
      await app.api.post('/v1/domains/guarded.test/dkim/ed25519/rotate'),
      await app.api.delete('/v1/domains/guarded.test/dkim/ed25519'),
    ]) {
      assert.equal(res.status, 403, res.text);
      assert.equal(res.body.error.code, 'live_key_required');
    }
    assert.equal((await app.db('domain_keys').join('domains', 'domains.id', 'domain_keys.domain_id').where({ name: 'guarded.test' })).length, 2);
  });
});
