// MTA-STS (RFC 8461) outbound against a loopback policy host and MX sinks whose certificates a test CA issued.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink';
import { createTestCa, type TestCa } from './test-ca';
import { policyText, startStsServer, type StsServer } from './sts-server';
import { attemptsOf, messageRow, pointMx, sendMessage, startWorld, type World } from './world';

describe('MTA-STS outbound', () => {
  let ca: TestCa;
  let sts: StsServer;
  let good: SmtpSink; // 127.0.0.2, certificate valid for mx.good.test
  let wrongName: SmtpSink; // 127.0.0.3, certificate for another name
  let plain: SmtpSink; // 127.0.0.4, no STARTTLS at all
  let world: World;

  /** A domain publishing an STS record and a policy, with its MX hosts. */
  const publish = (domain: string, mode: 'enforce' | 'testing', patterns: string[], mx: Array<{ name: string; address: string }>, id = '1') => {
    world.dns.set(`_mta-sts.${domain}`, [{ type: 'TXT', data: `v=STSv1; id=${id}` }]);
    world.dns.set(`mta-sts.${domain}`, [{ type: 'A', data: '127.0.0.1' }]);
    sts.policies.set(domain, policyText(mode, patterns));
    pointMx(world.dns, domain, mx);
  };
  const mxGood = { name: 'mx.good.test', address: '127.0.0.2' };
  const mxWrongCert = { name: 'mx.wrongcert.test', address: '127.0.0.3' };

  before(async () => {
    ca = createTestCa();
    const domains = ['enforce.test', 'mismatch.test', 'wrongcert.test', 'testing.test', 'plain.test'];
    sts = await startStsServer(ca.issue(domains.map((d) => `mta-sts.${d}`)));
    good = await startSmtpSink({ host: '127.0.0.2', tls: 'starttls', certificate: ca.issue(['mx.good.test']) });
    wrongName = await startSmtpSink({ host: '127.0.0.3', port: good.port, tls: 'starttls', certificate: ca.issue(['somewhere-else.test']) });
    plain = await startSmtpSink({ host: '127.0.0.4', port: good.port });
    world = await startWorld({ port: good.port, config: { delivery: { tlsCaFile: ca.file, mtaSts: { httpsPort: sts.port } } } });
  });
  after(async () => {
    await world?.stop();
    await Promise.all([good?.close(), wrongName?.close(), plain?.close(), sts?.close()]);
    ca?.remove();
  });

  it('enforce with a matching MX delivers over verified TLS and records the TLS facts', async () => {
    publish('enforce.test', 'enforce', ['mx.good.test'], [mxGood]);
    const id = await sendMessage(world, { to: 'alice@enforce.test' });
    await world.mta.runOnce();

    const [received] = await good.waitFor(1);
    assert.equal(received.secure, true);
    assert.deepEqual(received.rcptTo, ['alice@enforce.test']);
    const [attempt] = await attemptsOf(world, id);
    assert.equal(attempt.outcome, 'delivered');
    assert.equal(Boolean(attempt.tls), true);
    assert.match(attempt.tls_version, /^TLSv1\.[23]$/);
    assert.equal(Boolean(attempt.tls_verified), true);
    assert.equal(attempt.tls_policy, 'enforce');
    assert.equal(attempt.tls_failure, null);
    const stored = await world.app.db('mta_sts_policies').where({ domain: 'enforce.test' }).first();
    assert.equal(stored.policy_id, '1');
    assert.equal(Number(stored.expires_at), world.clock.now() + 86_400_000, 'kept for max_age');

    const shown = await world.live.get(`/v1/messages/${id}`);
    assert.equal(shown.status, 200);
    const [apiAttempt] = shown.body.attempts;
    assert.equal(apiAttempt.tls_verified, true);
    assert.equal(apiAttempt.tls_policy, 'enforce');
    assert.match(apiAttempt.tls_version, /^TLSv1\.[23]$/);
  });

  it('enforce with an MX the policy does not name defers and says why, without connecting', async () => {
    publish('mismatch.test', 'enforce', ['mx.good.test'], [{ name: 'mx.elsewhere.test', address: '127.0.0.2' }]);
    const before = good.connections;
    const id = await sendMessage(world, { to: 'bob@mismatch.test' });
    await world.mta.runOnce();

    const row = await messageRow(world, id);
    assert.equal(row.status, 'deferred');
    assert.match(row.last_response, /MTA-STS \(enforce\): no MX host of mismatch\.test \(mx\.elsewhere\.test\) matches the policy's mx mx\.good\.test/);
    assert.equal(good.connections, before, 'no connection to a host outside the policy');
    const [attempt] = await attemptsOf(world, id);
    assert.equal(attempt.tls_policy, 'enforce');
    assert.equal(attempt.tls_failure, 'validation-failure');
  });

  it('enforce with a certificate not valid for the MX name defers, never falling back to plain text', async () => {
    publish('wrongcert.test', 'enforce', ['*.wrongcert.test'], [mxWrongCert]);
    const id = await sendMessage(world, { to: 'carol@wrongcert.test' });
    await world.mta.runOnce();

    const row = await messageRow(world, id);
    assert.equal(row.status, 'deferred');
    assert.match(row.last_response, /MTA-STS \(enforce\): verified TLS to mx\.wrongcert\.test failed \(certificate-host-mismatch: .*\); not sent in plain text/);
    assert.equal(wrongName.messages.length + wrongName.unaccepted.length, 0, 'nothing was sent');
    const [attempt] = await attemptsOf(world, id);
    assert.equal(attempt.outcome, 'deferred');
    assert.equal(attempt.tls_failure, 'certificate-host-mismatch');
    assert.equal(Boolean(attempt.tls_verified), false);
  });

  it('enforce with an MX that offers no STARTTLS defers: a refused or stripped STARTTLS never turns into plain text', async () => {
    publish('plain.test', 'enforce', ['mx.plain.test'], [{ name: 'mx.plain.test', address: '127.0.0.4' }]);
    const id = await sendMessage(world, { to: 'frank@plain.test' });
    await world.mta.runOnce();

    const row = await messageRow(world, id);
    assert.equal(row.status, 'deferred');
    assert.match(row.last_response, /MTA-STS \(enforce\): verified TLS to mx\.plain\.test failed/);
    assert.equal(plain.messages.length + plain.unaccepted.length, 0, 'nothing was sent in plain text');
  });

  it('testing mode delivers over the unverifiable certificate and records the failure', async () => {
    publish('testing.test', 'testing', ['mx.wrongcert.test'], [mxWrongCert]);
    const id = await sendMessage(world, { to: 'dave@testing.test' });
    await world.mta.runOnce();

    const [received] = await wrongName.waitFor(1);
    assert.equal(received.secure, true);
    const [attempt] = await attemptsOf(world, id);
    assert.equal(attempt.outcome, 'delivered');
    assert.equal(Boolean(attempt.tls_verified), false);
    assert.equal(attempt.tls_policy, 'testing');
    assert.equal(attempt.tls_failure, 'certificate-host-mismatch');
  });

  it('a stored policy is applied when the policy host is down, even after the in-memory answer expired', async () => {
    await sts.close();
    // A new id makes the MTA fetch again; the fetch fails, so the stored (unexpired) policy stays in force.
    world.dns.set('_mta-sts.enforce.test', [{ type: 'TXT', data: 'v=STSv1; id=2' }]);
    pointMx(world.dns, 'enforce.test', [{ name: 'mx.elsewhere.test', address: '127.0.0.2' }]);
    world.clock.advance(61_000); // past delivery.mxCacheSeconds: policy and MX are looked up again
    const id = await sendMessage(world, { to: 'erin@enforce.test' });
    await world.mta.runOnce();

    const row = await messageRow(world, id);
    assert.equal(row.status, 'deferred');
    assert.match(row.last_response, /no MX host of enforce\.test \(mx\.elsewhere\.test\) matches the policy's mx mx\.good\.test/);
    assert.ok(world.app.logs.some((l) => /MTA-STS policy fetch failed/.test(l) && /"cached":true/.test(l)), 'the failed fetch is logged');
  });
});
