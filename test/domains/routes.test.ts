// The domains API: add, list, show, delete; validation, scopes and the records returned.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createKey as makeKey } from '../../src/auth/keys';
import { startTestApp, createKey, type TestApp } from '../support/app';
import { addDomain, record } from './helpers';

describe('domains API', () => {
  let app: TestApp;

  before(async () => {
    app = await startTestApp({ ips: [{ address: '192.0.2.10', hostname: 'out1.pigeon.test' }, { address: '2001:db8::10', hostname: 'out2.pigeon.test' }] });
  });
  after(() => app.stop());

  it('adding a domain returns 201 with its DKIM, SPF, DMARC and return-path records, all pending', async () => {
    const res = await app.api.post('/v1/domains', { name: '  Example.TEST ' });
    assert.equal(res.status, 201);
    const d = res.body;
    assert.match(d.id, /^dom_/);
    assert.equal(d.name, 'example.test');
    assert.equal(d.status, 'pending');
    assert.equal(d.verified_at, null);
    assert.match(d.dkim.selector, /^pg2026\d\d[a-z0-9]{4}$/);
    assert.equal(d.dkim.algorithm, 'rsa');
    const dkim = record(d, 'dkim');
    assert.equal(dkim.type, 'TXT');
    assert.equal(dkim.host, `${d.dkim.selector}._domainkey.example.test`);
    assert.match(dkim.value, /^v=DKIM1; k=rsa; p=MIIBIjAN[A-Za-z0-9+/=]+$/);
    assert.equal(dkim.required, true);
    assert.deepEqual(
      d.dns_records.map((r: { purpose: string; state: string }) => [r.purpose, r.state]),
      [['dkim', 'pending'], ['spf', 'pending'], ['dmarc', 'pending'], ['return_path', 'pending']],
    );
    assert.equal(record(d, 'spf').host, 'example.test');
    assert.equal(record(d, 'spf').value, 'v=spf1 ip4:192.0.2.10 ip6:2001:db8::10 ~all');
    assert.equal(record(d, 'dmarc').host, '_dmarc.example.test');
    assert.match(record(d, 'dmarc').value, /^v=DMARC1; p=none/);
    assert.deepEqual([record(d, 'return_path').type, record(d, 'return_path').host, record(d, 'return_path').required], ['CNAME', 'bounces.example.test', false]);
  });

  it('an internationalised name is stored in punycode; one trailing dot is accepted', async () => {
    assert.equal((await addDomain(app.api, 'Bücher.test')).name, 'xn--bcher-kva.test');
    assert.equal((await addDomain(app.api, 'fqdn.test.')).name, 'fqdn.test');
  });

  it('ed25519 keys are available on request', async () => {
    const d = await addDomain(app.api, 'ed.test', { dkim_algorithm: 'ed25519' });
    assert.equal(d.dkim?.algorithm, 'ed25519');
    assert.match(record(d, 'dkim').value, /^v=DKIM1; k=ed25519; p=[A-Za-z0-9+/]{43}=$/);
  });

  it('invalid names are 422 invalid_domain with param name, and nothing is stored', async () => {
    const before = await app.db('domains').count({ n: '*' }).first();
    for (const name of ['', 'localhost', '127.0.0.1', '[::1]', '127.1', 'example.test..', '.example.test', 'exa mple.test', 'a_b.test', '*.example.test', '-a.test', 'a-.test', `${'a'.repeat(64)}.test`, `${'abcdefghi.'.repeat(26)}test`, 'example.123', 'foo..test']) {
      const res = await app.api.post('/v1/domains', { name });
      assert.equal(res.status, 422, `${JSON.stringify(name)} → ${res.status}`);
      assert.equal(res.body.error.code, 'invalid_domain', name);
      assert.equal(res.body.error.param, 'name');
    }
    assert.deepEqual(await app.db('domains').count({ n: '*' }).first(), before);
  });

  it('unknown fields and a bad algorithm are 422; a second add of the same name is 409 domain_exists', async () => {
    assert.equal((await app.api.post('/v1/domains', { name: 'x.test', dns: true })).status, 422);
    assert.equal((await app.api.post('/v1/domains', { name: 'x.test', dkim_algorithm: 'dsa' })).body.error.param, 'dkim_algorithm');
    await addDomain(app.api, 'twice.test');
    const res = await app.api.post('/v1/domains', { name: 'TWICE.test.' });
    assert.equal(res.status, 409);
    assert.equal(res.body.error.code, 'domain_exists');
  });

  it('the list is paginated newest first with a total', async () => {
    const fresh = await startTestApp();
    try {
      for (const n of ['one.test', 'two.test', 'three.test']) await addDomain(fresh.api, n);
      const first = await fresh.api.get('/v1/domains?limit=2');
      assert.equal(first.status, 200);
      assert.deepEqual(first.body.data.map((d: { name: string }) => d.name), ['three.test', 'two.test']);
      assert.deepEqual([first.body.pagination.has_more, first.body.pagination.total], [true, 3]);
      assert.equal(first.body.data[0].dns_records.length, 4);
      const second = await fresh.api.get(`/v1/domains?limit=2&cursor=${first.body.pagination.next_cursor}`);
      assert.deepEqual(second.body.data.map((d: { name: string }) => d.name), ['one.test']);
      assert.deepEqual(second.body.pagination, { has_more: false, next_cursor: null, total: 3 });
      assert.equal((await fresh.api.get('/v1/domains?limit=0')).status, 400);
    } finally {
      await fresh.stop();
    }
  });

  it('GET /v1/domains/{domain} finds the domain by any spelling of its name; unknown is 404', async () => {
    await addDomain(app.api, 'shown.test');
    const res = await app.api.get('/v1/domains/SHOWN.test.');
    assert.equal(res.status, 200);
    assert.equal(res.body.name, 'shown.test');
    assert.equal((await app.api.get('/v1/domains/nope.test')).status, 404);
    assert.equal((await app.api.get('/v1/domains/not..valid')).status, 404);
  });

  it('another account cannot see or delete the domain', async () => {
    await addDomain(app.api, 'mine.test');
    await app.db('accounts').insert({ id: 'acc_other', name: 'other', created_at: 0 });
    const { secret } = await makeKey(app.db, { accountId: 'acc_other', name: 'k', mode: 'live', scopes: ['domains:manage'] }, 0);
    const other = app.api.withKey(secret);
    assert.equal((await other.get('/v1/domains/mine.test')).status, 404);
    assert.equal((await other.delete('/v1/domains/mine.test')).status, 404);
    assert.equal((await other.get('/v1/domains')).body.pagination.total, 0);
    assert.equal((await other.post('/v1/domains', { name: 'mine.test' })).status, 201, 'each account may add the same name');
  });

  it('every domains route needs domains:manage', async () => {
    const key = await createKey(app, 'test', ['messages:send']);
    const api = app.api.withKey(key);
    for (const res of [
      await api.post('/v1/domains', { name: 'scoped.test' }),
      await api.get('/v1/domains'),
      await api.get('/v1/domains/example.test'),
      await api.post('/v1/domains/example.test/verify'),
      await api.post('/v1/domains/example.test/dkim/rotate'),
      await api.delete('/v1/domains/example.test'),
    ]) {
      assert.equal(res.status, 403);
    }
  });

  it('the OpenAPI document describes the domain record and marks the extensions', async () => {
    const doc = (await app.api.get('/v1/openapi.json')).body;
    const text = JSON.stringify(doc);
    assert.match(text, /temporary_error/);
    assert.ok(doc.paths['/v1/domains/{domain}/dkim/rotate']);
    assert.ok(doc.paths['/v1/domains/{domain}'].get['x-pigeon-extension']);
  });
});
