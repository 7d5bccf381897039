// The SSRF guard: webhook URLs may only reach public addresses, checked when saved and again at every attempt.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../src/clock';
import { isPublicAddress } from '../../src/webhooks/ssrf';
import { startDnsServer } from '../support/dns-server';
import { startWebhookReceiver } from '../support/webhook-receiver';
import { createWebhook, dispatch, recordMessageEvent, startWebhookApp } from './helpers';

const guarded = (dnsAddress: string) => ({ webhooks: { allowPrivateTargets: false, allowHttp: false }, dns: { servers: [dnsAddress] } });

describe('webhook SSRF guard', () => {
  it('refuses loopback, private, link-local, CGNAT and mapped addresses, and names that resolve to them', async () => {
    const dns = await startDnsServer({
      'loopback.attacker.test': [{ type: 'A', data: '127.0.0.1' }],
      'mixed.attacker.test': [{ type: 'A', data: '93.184.216.34' }, { type: 'AAAA', data: 'fd00::1' }],
      'public.customer.test': [{ type: 'A', data: '93.184.216.34' }],
    });
    const app = await startWebhookApp(guarded(dns.address));
    try {
      const refused = [
        'https://127.0.0.1/hook', 'https://10.0.0.1/hook', 'https://[::1]/hook', 'https://169.254.169.254/latest/meta-data',
        'https://loopback.attacker.test/hook', 'https://mixed.attacker.test/hook', 'https://100.64.0.1/hook',
        'https://[::ffff:10.0.0.1]/hook', 'https://0.0.0.0/hook', 'https://2130706433/hook', 'https://224.0.0.1/hook',
      ];
      for (const url of refused) {
        const res = await app.api.post('/v1/webhooks', { url, events: ['*'] });
        assert.equal(res.status, 422, url);
        assert.equal(res.body.error.code, 'private_target', url);
        assert.equal(res.body.error.param, 'url');
      }
      const http = await app.api.post('/v1/webhooks', { url: 'http://public.customer.test/hook', events: ['*'] });
      assert.equal(http.status, 422);
      assert.equal(http.body.error.code, 'invalid_url');
      assert.equal(http.body.error.message, 'url must use https');

      const unknown = await app.api.post('/v1/webhooks', { url: 'https://nowhere.customer.test/hook', events: ['*'] });
      assert.equal(unknown.status, 422);
      assert.equal(unknown.body.error.code, 'unresolvable_url');

      const withCredentials = await app.api.post('/v1/webhooks', { url: 'https://user:pw@public.customer.test/hook', events: ['*'] });
      assert.equal(withCredentials.body.error.code, 'invalid_url');

      assert.equal((await app.db('webhooks')).length, 0, 'nothing was stored');
      const ok = await app.api.post('/v1/webhooks', { url: 'https://public.customer.test/hook', events: ['*'] });
      assert.equal(ok.status, 201);
    } finally {
      await app.stop();
      await dns.close();
    }
  });

  it('checks again at delivery time, so a name rebound to loopback after creation gets nothing', async () => {
    const dns = await startDnsServer({ 'hooks.customer.test': [{ type: 'A', data: '93.184.216.34' }] });
    const receiver = await startWebhookReceiver({ https: true });
    const app = await startWebhookApp(guarded(dns.address), { clock: new FakeClock() });
    try {
      const hook = await createWebhook(app, { url: `https://hooks.customer.test:${receiver.port}/webhook`, events: ['*'] });
      dns.set('hooks.customer.test', [{ type: 'A', data: '127.0.0.1' }]);
      await recordMessageEvent(app, { type: 'message.delivered' });
      await dispatch(app);
      assert.equal(receiver.requests.length, 0);
      const d = (await app.api.get(`/v1/webhooks/${hook.id}/deliveries`)).body.data[0];
      assert.equal(d.status, 'pending', 'retried later, in case the name points back to a public address');
      assert.match(d.last_error, /resolves to 127\.0\.0\.1, a loopback address/);
    } finally {
      await app.stop();
      await Promise.all([receiver.close(), dns.close()]);
    }
  });

  it('connects to the address it checked: the HTTP client does not resolve the name again', async () => {
    const dns = await startDnsServer({ 'localhost.customer.test': [{ type: 'A', data: '127.0.0.1' }] });
    const receiver = await startWebhookReceiver();
    // Private targets allowed (so loopback works), but resolution still goes through dns.servers and is pinned.
    const app = await startWebhookApp({ dns: { servers: [dns.address] } });
    try {
      await createWebhook(app, { url: `http://localhost.customer.test:${receiver.port}/webhook`, events: ['*'] });
      const before = dns.queries.filter((q) => q.type === 'A').length;
      await recordMessageEvent(app, { type: 'message.delivered' });
      const [req] = await receiver.waitFor(1);
      assert.equal(req.headers.host, `localhost.customer.test:${receiver.port}`, 'Host names the URL, the socket goes to the checked IP');
      assert.equal(dns.queries.filter((q) => q.type === 'A').length - before, 1, 'one A lookup per attempt: the guard\'s');
    } finally {
      await app.stop();
      await Promise.all([receiver.close(), dns.close()]);
    }
  });

  it('a webhook URL at ::a.b.c.d (IPv4-compatible) or a name whose AAAA is ::7f00:1 is refused as private_target', async () => {
    const dns = await startDnsServer({
      'compat.attacker.test': [{ type: 'AAAA', data: '::7f00:1' }],
      'nat64.attacker.test': [{ type: 'AAAA', data: '64:ff9b::a9fe:a9fe' }],
      'sixtofour.attacker.test': [{ type: 'AAAA', data: '2002:a00:1::1' }],
    });
    const app = await startWebhookApp(guarded(dns.address));
    try {
      const refused = [
        'https://[::127.0.0.1]/hook', 'https://[::7f00:1]/hook', 'https://[::10.0.0.1]/hook', 'https://[::8.8.8.8]/hook',
        'https://compat.attacker.test/hook', 'https://nat64.attacker.test/hook', 'https://sixtofour.attacker.test/hook',
        'https://[::ffff:0:127.0.0.1]/hook',
      ];
      for (const url of refused) {
        const res = await app.api.post('/v1/webhooks', { url, events: ['*'] });
        assert.equal(res.status, 422, url);
        assert.equal(res.body.error.code, 'private_target', url);
      }
      assert.equal((await app.db('webhooks')).length, 0, 'nothing was stored');
    } finally {
      await app.stop();
      await dns.close();
    }
  });

  it('judges IPv6 forms that embed IPv4 (mapped, translated, NAT64, 6to4) by the IPv4 inside, and refuses ::/96 outright', () => {
    for (const a of ['::ffff:8.8.8.8', '::ffff:0:8.8.8.8', '64:ff9b::8.8.8.8', '2002:808:808::1']) assert.equal(isPublicAddress(a), true, a);
    const embedded = [
      '::127.0.0.1', '::7f00:1', '::a00:1', '::8.8.8.8', '::ffff:0:10.0.0.1', '64:ff9b::127.0.0.1', '64:ff9b::a9fe:a9fe',
      '64:ff9b:1::8.8.8.8', '2002:7f00:1::', '2002:c0a8:101::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2',
    ];
    for (const a of embedded) assert.equal(isPublicAddress(a), false, a);
  });

  it('tells public unicast from every special-purpose range', () => {
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700::1111', '::ffff:93.184.216.34']) assert.equal(isPublicAddress(a), true, a);
    const special = [
      '127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '255.255.255.255',
      '224.0.0.1', '192.0.2.1', '198.18.0.1', '::1', '::', 'fe80::1', 'fd00::1', 'ff02::1', '2001:db8::1', '::ffff:127.0.0.1',
      '::ffff:192.168.0.1', '64:ff9b::a00:1', 'not-an-ip',
    ];
    for (const a of special) assert.equal(isPublicAddress(a), false, a);
  });
});
