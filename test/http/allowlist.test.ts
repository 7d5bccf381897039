/** The IP allowlist: validation, enforcement, and X-Forwarded-For only behind a trusted proxy. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { liveApi, startTestApp } from '../support/app';
import ipaddr from 'ipaddr.js';
import { isAllowed, normalizeAddress, parseAllowlist } from '../../src/auth/allowlist';

describe('allowlist matching', () => {
  test('IPv4, IPv6, CIDR of both, and IPv4-mapped client addresses', () => {
    const { entries, faults } = parseAllowlist(['10.0.0.0/8', '192.168.1.7', '2001:db8::/32', '::1', ' 172.16.5.9/12 ']);
    assert.deepEqual(faults, []);
    assert.ok(entries.includes('172.16.0.0/12'), 'ranges are normalised to their network');
    assert.ok(isAllowed(entries, '10.200.3.4'));
    assert.ok(isAllowed(entries, '::ffff:10.1.1.1'));
    assert.ok(isAllowed(entries, '192.168.1.7'));
    assert.ok(!isAllowed(entries, '192.168.1.8'));
    assert.ok(isAllowed(entries, '2001:db8:ffff::1'));
    assert.ok(!isAllowed(entries, '2001:db9::1'));
    assert.ok(isAllowed(entries, '::1'));
    assert.ok(!isAllowed(entries, 'not-an-ip'));
    assert.ok(isAllowed([], '203.0.113.5'), 'an empty list allows all');
  });

  test('client addresses normalise as ipaddr.js writes them, also those the quick path for plain IPv4 takes', () => {
    const parsed = (a: string) => {
      const addr = ipaddr.parse(a);
      return (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress() ? (addr as ipaddr.IPv6).toIPv4Address() : addr).toString();
    };
    const addresses = ['127.0.0.1', '0.0.0.0', '255.255.255.255', '10.0.0.09', '010.1.1.1', '1.2.3.256', '192.168.001.1',
      '::ffff:127.0.0.1', '::FFFF:127.0.0.1', '::ffff:7f00:1', '::1', '2001:DB8::1', '0x7f.0.0.1', '1.2.3', '1.2.3.4.5'];
    for (const a of addresses) {
      let expected: string;
      try { expected = parsed(a); } catch { expected = a; }
      assert.equal(normalizeAddress(a), expected, a);
    }
    assert.equal(normalizeAddress('not-an-ip'), 'not-an-ip');
    assert.equal(normalizeAddress(undefined), '');
  });
});

describe('PUT /v1/settings/security', () => {
  test('invalid entries → 422 naming each, and nothing is saved', async () => {
    const app = await startTestApp();
    app.api = await liveApi(app); // security settings need a live key
    try {
      assert.equal((await app.api.put('/v1/settings/security', { allowed_ips: ['127.0.0.1'] })).status, 200);
      const res = await app.api.put('/v1/settings/security', { allowed_ips: ['10.0.0.1', '300.1.1.1', '10.0.0.0/33', 'fe80::/129', 'example.com'] });
      assert.equal(res.status, 422);
      assert.equal(res.body.error.code, 'invalid_ip');
      assert.equal(res.body.error.param, 'allowed_ips[1]');
      assert.deepEqual(res.body.error.details.map((d: { param: string }) => d.param), ['allowed_ips[1]', 'allowed_ips[2]', 'allowed_ips[3]', 'allowed_ips[4]']);
      const current = await app.api.get('/v1/settings/security');
      assert.deepEqual(current.body.allowed_ips, ['127.0.0.1']);
      const wrongType = await app.api.put('/v1/settings/security', { allowed_ips: '10.0.0.1' });
      assert.equal(wrongType.status, 422);
      assert.equal(wrongType.body.error.param, 'allowed_ips');
    } finally {
      await app.stop();
    }
  });

  test('a list without the caller address blocks the account with 403 ip_not_allowed; an empty list opens it', async () => {
    const app = await startTestApp();
    app.api = await liveApi(app);
    try {
      assert.equal((await app.api.put('/v1/settings/security', { allowed_ips: ['127.0.0.0/8', '::1'] })).status, 200);
      assert.equal((await app.api.get('/v1/account')).status, 200);
      assert.equal((await app.api.put('/v1/settings/security', { allowed_ips: ['203.0.113.0/24'] })).status, 200);
      const blocked = await app.api.get('/v1/account');
      assert.equal(blocked.status, 403);
      assert.equal(blocked.body.error.code, 'ip_not_allowed');
      // The account is locked out of the API: the sysadmin clears the list in the database or from another address.
      await app.db('account_settings').update({ allowed_ips: '[]' });
      await new Promise((r) => setTimeout(r, 2100)); // settings cache lifetime
      assert.equal((await app.api.get('/v1/account')).status, 200);
    } finally {
      await app.stop();
    }
  });

  test('X-Forwarded-For is ignored unless http.trustProxy is set', async () => {
    const direct = await startTestApp();
    const proxied = await startTestApp({ http: { trustProxy: true } });
    try {
      for (const app of [direct, proxied]) {
        app.api = await liveApi(app);
        assert.equal((await app.api.put('/v1/settings/security', { allowed_ips: ['198.51.100.7'] })).status, 200);
      }
      const spoof = { 'x-forwarded-for': '198.51.100.7' };
      assert.equal((await direct.api.get('/v1/account', spoof)).status, 403, 'untrusted header must not unlock');
      assert.equal((await proxied.api.get('/v1/account', spoof)).status, 200);
      // Behind a proxy only the entry the proxy appended (the last) counts.
      const chain = { 'x-forwarded-for': '198.51.100.7, 203.0.113.9' };
      assert.equal((await proxied.api.get('/v1/account', chain)).status, 403);
    } finally {
      await direct.stop();
      await proxied.stop();
    }
  });
});
