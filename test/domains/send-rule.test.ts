// The sending rule: live mail needs a verified From domain; sandbox mail does not.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, createKey, type TestApp } from '../support/app';
import { startDnsServer, type TestDnsServer } from '../support/dns-server';
import { addDomain, publish, verify } from './helpers';

describe('sending from a domain', () => {
  let dns: TestDnsServer;
  let app: TestApp;

  before(async () => {
    dns = await startDnsServer();
    app = await startTestApp({ dns: { servers: [dns.address] }, domains: { dnsTimeoutMs: 150 } });
  });
  after(async () => {
    await app?.stop();
    await dns?.close();
  });

  const payload = (from: string) => ({ from, to: [{ email: 'someone@receiver.test' }], subject: 'hi', text: 'hello' });

  it('a live send from an unverified domain is 422 domain_not_verified; after verification it is 202', async () => {
    const live = app.api.withKey(await createKey(app, 'live', ['messages:send']));
    const d = await addDomain(app.api, 'sender.test');

    const refused = await live.post('/v1/messages/send', payload('app@sender.test'));
    assert.equal(refused.status, 422);
    assert.equal(refused.body.error.code, 'domain_not_verified');

    publish(dns, d);
    assert.equal((await verify(app.api, 'sender.test')).status, 'verified');
    const accepted = await live.post('/v1/messages/send', payload('app@sender.test'));
    assert.equal(accepted.status, 202, accepted.text);

    // A subdomain of a verified domain is not verified itself.
    assert.equal((await live.post('/v1/messages/send', payload('app@news.sender.test'))).status, 422);
  });

  it('a sandbox send from an unverified domain is accepted', async () => {
    await addDomain(app.api, 'unverified.test');
    const sandbox = app.api.withKey(await createKey(app, 'test', ['messages:send']));
    assert.equal((await sandbox.post('/v1/messages/send', payload('app@unverified.test'))).status, 202);
  });
});
