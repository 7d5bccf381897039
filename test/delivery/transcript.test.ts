/** Each attempt stores its SMTP conversation (body elided, bounded), shown by GET /v1/messages/{id}. Real sink. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startSmtpSink } from '../support/smtp-sink';
import { pointMx, sendMessage, startWorld } from './world';
import { Transcript, TRANSCRIPT_MAX_BYTES } from '../../src/delivery/transcript';

describe('SMTP transcripts', () => {
  it('a deferral and then a delivery: EHLO, MAIL, RCPT and DATA with the replies, and no body text', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.2', reply: (ctx) => (ctx.stage === 'rcpt' && ctx.attempt === 1 ? { code: 451, message: '4.7.1 greylisted' } : undefined) });
    const world = await startWorld({ port: sink.port });
    try {
      pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.2' }]);
      const id = await sendMessage(world, { to: 'ann@dest.test', subject: 'Transcript check', body: 'SECRET-BODY-TEXT-4242' });
      await world.mta.runOnce();
      assert.equal((await world.live.post(`/v1/messages/${id}/retry`)).status, 200);
      await world.mta.runOnce();
      await sink.waitFor(1);

      const res = await world.live.get(`/v1/messages/${id}`);
      assert.equal(res.status, 200);
      const [deferred, delivered] = res.body.attempts.map((a: { transcript: string }) => a.transcript);
      assert.match(deferred, /^S: 220 /m, 'the greeting');
      assert.match(deferred, /^C: EHLO out1\.pigeon\.test$/m);
      assert.match(deferred, /^C: MAIL FROM:<[^>]+>/m);
      // the sink offers PIPELINING: the envelope's three commands go out together, before any reply
      assert.match(deferred, /^C: MAIL FROM:<[^>]+>\nC: RCPT TO:<ann@dest\.test>\nC: DATA\nS: 250 /m);
      assert.match(deferred, /^S: 451 4\.7\.1 greylisted$/m);
      assert.doesNotMatch(deferred, /message body elided/, 'no body after the refused recipient');

      assert.match(delivered, /^C: RCPT TO:<ann@dest\.test>$/m);
      assert.match(delivered, /^C: DATA$/m);
      assert.match(delivered, /^S: 354 /m);
      assert.match(delivered, /^C: <message body elided: \d+ bytes/m);
      assert.match(delivered, /^S: 250 /m);
      for (const t of [deferred, delivered]) {
        assert.doesNotMatch(t, /SECRET-BODY-TEXT|Transcript check/, 'neither the body nor the header section');
        assert.ok(Buffer.byteLength(t) <= TRANSCRIPT_MAX_BYTES + 100);
      }
    } finally {
      await world.stop();
      await sink.close();
    }
  });

  it('an unreachable MX host leaves a note of what went wrong', async () => {
    const sink = await startSmtpSink({ host: '127.0.0.2' });
    const port = sink.port;
    await sink.close(); // nothing listens on the port now
    const world = await startWorld({ port });
    try {
      pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.2' }]);
      const id = await sendMessage(world, { to: 'bob@dest.test' });
      await world.mta.runOnce();
      const [attempt] = (await world.live.get(`/v1/messages/${id}`)).body.attempts;
      assert.equal(attempt.outcome, 'deferred');
      assert.match(attempt.transcript, /^\*\*\* connecting to mx\.dest\.test \[127\.0\.0\.2\]/m);
      assert.match(attempt.transcript, /^\*\*\* E[A-Z]+: .*ECONNREFUSED/m);
    } finally {
      await world.stop();
    }
  });

  it('a transcript stops at 16 KiB and says how much it left out', () => {
    const t = new Transcript();
    for (let i = 0; i < 2000; i++) t.add(`S: 250-${'x'.repeat(60)} ${i}`);
    const text = t.toString();
    assert.ok(Buffer.byteLength(text) <= TRANSCRIPT_MAX_BYTES + 100, `${Buffer.byteLength(text)} bytes`);
    assert.match(text, /\*\*\* transcript cut at 16384 bytes: \d+ more lines$/);
  });
});
