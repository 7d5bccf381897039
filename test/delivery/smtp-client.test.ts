/**
 * The SMTP client alone against a real sink: what the recipient receives is exactly the message, whatever its
 * size and content, message after message on one connection (the body and the final dot leave in one write:
 * smtp-client.ts corks the socket around them).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SmtpClient } from '../../src/delivery/smtp-client';
import { startSmtpSink } from '../support/smtp-sink';

const message = (subject: string, body: string): Buffer =>
  Buffer.from(`From: a@sender.test\r\nTo: b@dest.test\r\nSubject: ${subject}\r\n\r\n${body}`);

describe('SMTP client', () => {
  it('delivers bodies byte for byte over one connection: dot-led lines, one far larger than a socket buffer, then a small one again', async () => {
    const sink = await startSmtpSink();
    const opened = await SmtpClient.open({
      host: 'mx.sink.test', address: '127.0.0.1', port: sink.port, localAddress: '127.0.0.1', ehlo: 'out.sender.test', tls: 'none',
      connectTimeoutMs: 5000, greetingTimeoutMs: 5000, commandTimeoutMs: 5000, dataTimeoutMs: 5000,
    });
    assert.ok('client' in opened, 'connected');
    const { client } = opened;
    try {
      const bodies = [
        message('dots', '.a line that starts with a dot\r\n..two dots\r\n.\r\nlast line\r\n'),
        message('large', `${'a line of a large message, long enough to fill socket buffers many times over\r\n'.repeat(40_000)}.the end\r\n`),
        message('small', 'just one line\r\n'),
      ];
      for (const raw of bodies) {
        const result = await client.send({ from: 'bounce@sender.test', to: 'b@dest.test', size: raw.length, use8BitMime: false }, raw);
        assert.equal(result.ok, true, result.ok ? '' : result.error.message);
        assert.match(result.transcript, /^C: <message body elided: \d+ bytes/m);
        assert.match(result.transcript, /^S: 250 /m);
      }
      const received = await sink.waitFor(bodies.length, 10_000);
      assert.equal(sink.connections, 1);
      received.forEach((m, i) => assert.ok(m.raw.equals(bodies[i]), `message ${i + 1} arrived as sent (${m.raw.length} of ${bodies[i].length} bytes)`));
    } finally {
      client.close();
      await sink.close();
    }
  });
});
