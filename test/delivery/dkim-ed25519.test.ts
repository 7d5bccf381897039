// A domain with an Ed25519 second key: delivered mail carries two DKIM signatures that a receiver verifies, through rotations of either key.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink';
import { verifyDkim } from '../support/mail';
import { createKey, type ApiClient } from '../support/app';
import { publish, verify, type DomainBody } from '../domains/helpers';
import { pointMx, sendMessage, startWorld, SENDER_DOMAIN, type World } from './world';

const MINUTE = 60_000;

/** Sends one message, runs the MTA, and returns what a receiver's DKIM check says of each signature. */
async function deliverOne(world: World, sink: SmtpSink, n: number): Promise<Array<[string | undefined, string | undefined, string]>> {
  await sendMessage(world, { to: `r${n}@dest.test`, subject: `message ${n}` });
  await world.mta.runOnce();
  const received = await sink.waitFor(n);
  const results = await verifyDkim(received[n - 1].raw, world.dns.address);
  return results.map((r) => [r.selector, r.algo, r.result]);
}

async function domainsApi(world: World): Promise<ApiClient> {
  return world.app.api.withKey(await createKey(world.app, 'live', ['domains:manage']));
}

/** Publishes every record the domain asks for, verifies, and lets the signing-key cache (1 min) expire. */
async function publishAndVerify(world: World, body: DomainBody): Promise<DomainBody> {
  publish(world.dns, body);
  const verified = await verify(world.app.api, SENDER_DOMAIN);
  world.clock.advance(MINUTE + 1);
  return verified;
}

describe('DKIM with an Ed25519 second key, end to end', () => {
  it('a domain without an Ed25519 key carries one signature; once its Ed25519 key verifies, mail carries both and both verify', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.1' });
    const world = await startWorld({ port: sink.port });
    try {
      pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
      assert.deepEqual(await deliverOne(world, sink, 1), [[world.selector, 'rsa-sha256', 'pass']]);

      const api = await domainsApi(world);
      const added = await api.post(`/v1/domains/${SENDER_DOMAIN}/dkim/ed25519`);
      assert.equal(added.status, 200, added.text);
      const ed = (added.body as DomainBody).dkim_ed25519!;
      assert.equal(ed.status, 'pending');
      // Pending: not published yet, so it does not sign.
      world.clock.advance(MINUTE + 1);
      assert.deepEqual(await deliverOne(world, sink, 2), [[world.selector, 'rsa-sha256', 'pass']]);

      const verified = await publishAndVerify(world, added.body as DomainBody);
      assert.equal(verified.status, 'verified');
      assert.deepEqual(await deliverOne(world, sink, 3), [[ed.selector, 'ed25519-sha256', 'pass'], [world.selector, 'rsa-sha256', 'pass']]);
      const latest = await world.app.db('messages').orderBy('created_at', 'desc').first('dkim');
      assert.match(latest.dkim, new RegExp(`^d=${SENDER_DOMAIN} s=${world.selector} a=rsa-sha256, s=${ed.selector} a=ed25519-sha256$`));

      const removed = await api.delete(`/v1/domains/${SENDER_DOMAIN}/dkim/ed25519`);
      assert.equal(removed.status, 200, removed.text);
      world.clock.advance(MINUTE + 1);
      assert.deepEqual(await deliverOne(world, sink, 4), [[world.selector, 'rsa-sha256', 'pass']]);
    } finally {
      await world.stop();
      await sink.close();
    }
  });

  it('rotating the RSA key and then the Ed25519 key: every message in between carries two signatures that verify', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.1' });
    const world = await startWorld({ port: sink.port });
    try {
      pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
      const api = await domainsApi(world);
      const withEd = await publishAndVerify(world, (await api.post(`/v1/domains/${SENDER_DOMAIN}/dkim/ed25519`)).body as DomainBody);
      const ed1 = withEd.dkim_ed25519!.selector;

      const rsaRotation = await api.post(`/v1/domains/${SENDER_DOMAIN}/dkim/rotate`);
      assert.equal(rsaRotation.status, 200, rsaRotation.text);
      const rotatedRsa = await publishAndVerify(world, rsaRotation.body as DomainBody);
      const rsa2 = rotatedRsa.dkim!.selector;
      assert.notEqual(rsa2, world.selector);
      assert.deepEqual(await deliverOne(world, sink, 1), [[ed1, 'ed25519-sha256', 'pass'], [rsa2, 'rsa-sha256', 'pass']]);

      const edRotation = await api.post(`/v1/domains/${SENDER_DOMAIN}/dkim/ed25519/rotate`);
      assert.equal(edRotation.status, 200, edRotation.text);
      assert.equal((await api.post(`/v1/domains/${SENDER_DOMAIN}/dkim/ed25519/rotate`)).status, 409, 'one rotation at a time');
      const rotatedEd = await publishAndVerify(world, edRotation.body as DomainBody);
      const ed2 = rotatedEd.dkim_ed25519!;
      assert.notEqual(ed2.selector, ed1);
      assert.equal(ed2.status, 'active');
      assert.equal(rotatedEd.dkim!.selector, rsa2, 'rotating the Ed25519 key leaves the RSA key alone');
      assert.deepEqual(await deliverOne(world, sink, 2), [[ed2.selector, 'ed25519-sha256', 'pass'], [rsa2, 'rsa-sha256', 'pass']]);
      assert.equal(rotatedEd.dns_records.filter((r) => r.purpose === 'dkim').length, 2, 'the replaced keys\' records are no longer asked for');
    } finally {
      await world.stop();
      await sink.close();
    }
  });
});
