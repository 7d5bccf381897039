// Periodic re-checks with a fake clock: verified → failing when records disappear → pending after the grace period.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../src/clock';
import { isVerifiedDomain } from '../../src/domains/lookup';
import { startTestApp, type TestApp } from '../support/app';
import { startDnsServer, type TestDnsServer } from '../support/dns-server';
import { addDomain, publish, record, verify, type DomainBody } from './helpers';

const HOUR = 3_600_000;

describe('domain re-checks', () => {
  let dns: TestDnsServer;
  let app: TestApp;
  const clock = new FakeClock();

  before(async () => {
    dns = await startDnsServer();
    app = await startTestApp({ dns: { servers: [dns.address] }, domains: { dnsTimeoutMs: 150 } }, { clock });
  });
  after(async () => {
    await app.stop();
    await dns.close();
  });

  const worker = () => {
    const w = app.workers.find((x) => x.name === 'domains-recheck');
    assert.ok(w?.runOnce, 'the domains re-check worker is wired in');
    return w.runOnce!;
  };
  const show = async (name: string): Promise<DomainBody> => (await app.api.get(`/v1/domains/${name}`)).body;
  const accountId = async () => (await app.api.get('/v1/account')).body.id as string;
  const eventTypes = async (name: string) => (await app.db('domain_events').where({ domain: name }).orderBy('id')).map((e) => e.type as string);

  async function verifiedDomain(name: string): Promise<DomainBody> {
    const added = await addDomain(app.api, name);
    publish(dns, added);
    const d = await verify(app.api, name);
    assert.equal(d.status, 'verified');
    return d;
  }

  it('records removed: failing at the next re-check, still sendable, unverified after the grace period', async () => {
    const d = await verifiedDomain('vanish.test');
    const checkedAt = d.last_checked_at;
    dns.remove(record(d, 'dkim').host);

    clock.advance(5 * HOUR);
    await worker()();
    assert.equal((await show('vanish.test')).last_checked_at, checkedAt, 'not due before the interval');
    assert.equal((await show('vanish.test')).status, 'verified');

    clock.advance(1 * HOUR);
    await worker()();
    let now = await show('vanish.test');
    assert.equal(now.status, 'failing');
    assert.equal(now.failing_since, new Date(clock.now()).toISOString());
    assert.equal(now.grace_ends_at, new Date(clock.now() + 72 * HOUR).toISOString());
    assert.equal(record(now, 'dkim').state, 'missing');
    assert.equal(await isVerifiedDomain(app.db, await accountId(), 'vanish.test'), true, 'failing is still sendable during the grace period');

    clock.advance(66 * HOUR); // 66 h into the grace period: re-checked, still failing
    await worker()();
    assert.equal((await show('vanish.test')).status, 'failing');

    clock.advance(6 * HOUR); // 72 h
    await worker()();
    now = await show('vanish.test');
    assert.equal(now.status, 'pending');
    assert.equal(now.verified_at, null);
    assert.equal(now.failing_since, null);
    assert.equal(await isVerifiedDomain(app.db, await accountId(), 'vanish.test'), false);
    assert.deepEqual(await eventTypes('vanish.test'), ['domain.verified', 'domain.failing', 'domain.unverified']);

    clock.advance(24 * HOUR); // pending domains are not re-checked on their own
    await worker()();
    assert.equal((await show('vanish.test')).last_checked_at, now.last_checked_at);
  });

  it('records back during the grace period: verified again', async () => {
    const d = await verifiedDomain('flaky.test');
    dns.remove('flaky.test'); // SPF gone
    clock.advance(6 * HOUR);
    await worker()();
    assert.equal((await show('flaky.test')).status, 'failing');
    assert.equal(record(await show('flaky.test'), 'spf').state, 'missing');

    publish(dns, d);
    clock.advance(6 * HOUR);
    await worker()();
    const now = await show('flaky.test');
    assert.equal(now.status, 'verified');
    assert.equal(now.failing_since, null);
    assert.equal(now.verified_at, d.verified_at, 'the first verification time is kept');
    assert.deepEqual(await eventTypes('flaky.test'), ['domain.verified', 'domain.failing', 'domain.verified']);
  });

  it('a DNS outage at a re-check does not start failing a verified domain', async () => {
    await verifiedDomain('outage.test');
    dns.set('outage.test', 'SERVFAIL');
    clock.advance(6 * HOUR);
    await worker()();
    const now = await show('outage.test');
    assert.equal(now.status, 'verified');
    assert.equal(record(now, 'spf').state, 'temporary_error');
    assert.equal(now.last_checked_at, new Date(clock.now()).toISOString());
  });
});
