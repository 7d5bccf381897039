// The reputation watch against the test DNS with a fake clock: DNSBL listing and delisting, PTR/FCrDNS, the
// ip.listed / ip.delisted events to the accounts that use the address, /metrics, the pool API and the doctor.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createAccount } from '../../src/auth/accounts';
import { FakeClock, type Clock } from '../../src/clock';
import { dnsblQueryName } from '../../src/reputation/dnsbl';
import { checkReputation } from '../../src/reputation/doctor';
import { liveApi, scrapeMetrics, startTestApp, type TestApp } from '../support/app';
import { startDnsServer, type TestDnsServer } from '../support/dns-server';

const HOUR = 3_600_000;
const SHARED = '127.0.0.6'; // not 127.0.0.1: c-ares answers its PTR from /etc/hosts
const DEDICATED = '127.0.0.5';

describe('reputation watch', () => {
  let dns: TestDnsServer;
  let app: TestApp;
  let clock: FakeClock;
  let tenantB: string;
  let defaultAccount: string;
  let webhookId: string;

  const watch = () => app.workers.find((w) => w.name === 'reputation')!.runOnce!();
  const ipEvents = async () => (await app.db('events').where('type', 'like', 'ip.%').orderBy('id'))
    .map((e: { account_id: string; type: string; data: string }) => ({ account: e.account_id, type: e.type, data: JSON.parse(e.data) }));

  before(async () => {
    dns = await startDnsServer();
    clock = new FakeClock(Date.UTC(2026, 2, 2, 10, 0, 0));
    app = await startTestApp({
      dns: { servers: [dns.address], timeoutMs: 300 },
      ips: [{ address: SHARED, hostname: 'out1.pigeon.test' }, { address: DEDICATED, hostname: 'out5.pigeon.test', account: 'tenant-b' }],
      reputation: { enabled: true, dnsblZones: ['bl.test', 'zen.test'] },
    }, { clock: clock as Clock });
    defaultAccount = (await app.db('accounts').where({ name: 'default' }).first()).id;
    tenantB = (await createAccount(app.db, 'tenant-b', clock.now())).id;
    const live = await liveApi(app, ['ip-pools:manage', 'webhooks:manage']);
    assert.equal((await live.post('/v1/ip-pools', { name: 'marketing', ips: [SHARED] })).status, 201);
    webhookId = (await live.post('/v1/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['ip.listed', 'ip.delisted'] })).body.id;
    dns.set('6.0.0.127.in-addr.arpa', [{ type: 'PTR', data: 'out1.pigeon.test' }]);
    dns.set('out1.pigeon.test', [{ type: 'A', data: SHARED }]);
    dns.set('5.0.0.127.in-addr.arpa', [{ type: 'PTR', data: 'host-5.provider.test' }]);
  });
  after(async () => {
    await app.stop();
    await dns.close();
  });

  it('builds the DNSBL query names of RFC 5782 (IPv4 octets, IPv6 nibbles reversed)', () => {
    assert.equal(dnsblQueryName('192.0.2.99', 'zen.spamhaus.org'), '99.2.0.192.zen.spamhaus.org');
    assert.equal(dnsblQueryName('2001:db8::1', 'bl.test'), `1.${'0.'.repeat(23)}8.b.d.0.1.0.0.2.bl.test`);
  });

  it('a listing found is stored and told to every account that uses the address, with its pools', async () => {
    dns.set(dnsblQueryName(SHARED, 'bl.test'), [{ type: 'A', data: '127.0.0.2' }, { type: 'TXT', data: 'Listed: see https://bl.test/q?127.0.0.6' }]);
    dns.set(dnsblQueryName(DEDICATED, 'zen.test'), [{ type: 'A', data: '127.0.0.4' }]);
    dns.set(dnsblQueryName(DEDICATED, 'bl.test'), [{ type: 'A', data: '127.255.255.254' }]); // "public resolver refused": not a listing
    await watch();
    const events = await ipEvents();
    const at = new Date(clock.now()).toISOString();
    assert.deepEqual(events.filter((e) => e.data.address === SHARED).map((e) => [e.account, e.type, e.data.zone, e.data.pools]).sort(), [
      [defaultAccount, 'ip.listed', 'bl.test', ['default', 'marketing']],
      [tenantB, 'ip.listed', 'bl.test', ['default']],
    ].sort());
    assert.deepEqual(events.find((e) => e.account === defaultAccount)!.data,
      { address: SHARED, zone: 'bl.test', listed_at: at, codes: ['127.0.0.2'], reason: 'Listed: see https://bl.test/q?127.0.0.6', pools: ['default', 'marketing'] });
    assert.deepEqual(events.filter((e) => e.data.address === DEDICATED).map((e) => [e.account, e.type, e.data.zone]), [[tenantB, 'ip.listed', 'zen.test']],
      'a dedicated address concerns its account only');
    const deliveries = await app.db('webhook_deliveries').where({ webhook_id: webhookId });
    assert.equal(deliveries.length, 1, 'the default account\'s live webhook gets its one event');
  });

  it('shows each address\'s listings and reverse DNS in GET /v1/ip-pools/{name}, /metrics and the doctor', async () => {
    const pools = await liveApi(app, ['ip-pools:manage']);
    const res = await pools.get('/v1/ip-pools/marketing');
    assert.equal(res.status, 200);
    const rep = res.body.ips[0].reputation;
    assert.deepEqual(rep.listings.map((l: { zone: string; listed: boolean; codes: string[] }) => [l.zone, l.listed, l.codes]), [['bl.test', true, ['127.0.0.2']], ['zen.test', false, []]]);
    assert.equal(rep.fcrdns.ok, true, rep.fcrdns.detail);
    assert.match(rep.fcrdns.detail, /forward-confirmed/);
    const b = await app.db('ip_reputation').where({ address: DEDICATED }).orderBy('check_name');
    assert.deepEqual(b.map((r: { check_name: string; state: string }) => [r.check_name, r.state]), [['bl.test', 'unknown'], ['fcrdns', 'fail'], ['zen.test', 'listed']]);
    assert.match(b[0].error, /refused the query \(127\.255\.255\.254\)/);

    const metrics = await scrapeMetrics(app);
    assert.match(metrics, /pigeon_ip_dnsbl_listed\{address="127\.0\.0\.6",zone="bl\.test"\} 1/);
    assert.match(metrics, /pigeon_ip_dnsbl_listed\{address="127\.0\.0\.6",zone="zen\.test"\} 0/);
    assert.doesNotMatch(metrics, /pigeon_ip_dnsbl_listed\{address="127\.0\.0\.5",zone="bl\.test"\}/, 'never answered: no series');
    assert.match(metrics, /pigeon_ip_fcrdns_ok\{address="127\.0\.0\.5"\} 0/);

    const doctor = await checkReputation(app.config);
    const line = doctor.find((r) => r.name === `dnsbl ${SHARED} bl.test`)!;
    assert.equal(line.status, 'fail');
    assert.match(line.detail, /listed since .*127\.0\.0\.2: Listed: see/);
    assert.equal(doctor.find((r) => r.name === `dnsbl ${DEDICATED} bl.test`)!.status, 'warn');
  });

  it('checks again only when the interval has passed, and a delisting is told once', async () => {
    const queries = dns.queries.length;
    const count = (await ipEvents()).length;
    clock.advance(30 * 60_000);
    await watch();
    assert.equal(dns.queries.length, queries, 'no lookup before the hour is over');
    dns.remove(dnsblQueryName(SHARED, 'bl.test'));
    clock.advance(30 * 60_000);
    await watch();
    const fresh = (await ipEvents()).slice(count);
    assert.deepEqual(fresh.map((e) => [e.type, e.data.address, e.data.zone]), [['ip.delisted', SHARED, 'bl.test'], ['ip.delisted', SHARED, 'bl.test']]);
    assert.deepEqual(fresh.find((e) => e.account === defaultAccount)!.data,
      { address: SHARED, zone: 'bl.test', delisted_at: new Date(clock.now()).toISOString(), pools: ['default', 'marketing'] });
    clock.advance(HOUR);
    await watch();
    assert.equal((await ipEvents()).length, count + 2, 'still clear: no further event');
  });

  it('a failed lookup keeps the last known state and says why, with no event', async () => {
    dns.set(dnsblQueryName(DEDICATED, 'zen.test'), 'SERVFAIL');
    const count = (await ipEvents()).length;
    clock.advance(HOUR);
    await watch();
    const row = await app.db('ip_reputation').where({ address: DEDICATED, check_name: 'zen.test' }).first();
    assert.equal(row.state, 'listed');
    assert.match(row.error, /lookup of 5\.0\.0\.127\.zen\.test failed/);
    assert.equal((await ipEvents()).length, count);
  });
});
