// The SMTP sink, driven by a real SMTP client (nodemailer), records what a recipient MX would see.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import nodemailer from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport';
import { startSmtpSink, type SinkOptions, type SmtpSink } from './smtp-sink';
import { testCertificate } from './tls-cert';

const mail = (to: string | string[], extra: Record<string, unknown> = {}) => ({
  from: 'b+token@bounces.pigeon.test',
  to,
  subject: 'Hello from the sink test',
  text: 'Just a body.',
  ...extra,
});

async function withSink(opts: SinkOptions, body: (sink: SmtpSink) => Promise<void>): Promise<void> {
  const sink = await startSmtpSink(opts);
  try {
    await body(sink);
  } finally {
    await sink.close();
  }
}

function transport(sink: SmtpSink, extra: SMTPTransport.Options = {}) {
  return nodemailer.createTransport({ host: sink.host, port: sink.port, secure: false, name: 'out1.pigeon.test', localAddress: '127.0.0.2', ...extra });
}

describe('SMTP sink', () => {
  it('records a delivered message with envelope, source address and EHLO name', async () => {
    await withSink({ host: '127.0.0.3' }, async (sink) => {
      const info = await transport(sink).sendMail(mail('alice@example.test'));
      assert.deepEqual(info.accepted, ['alice@example.test']);
      const [message] = await sink.waitFor(1);
      assert.equal(message.mailFrom, 'b+token@bounces.pigeon.test');
      assert.deepEqual(message.rcptTo, ['alice@example.test']);
      assert.equal(message.remoteAddress, '127.0.0.2');
      assert.equal(message.localAddress, '127.0.0.3');
      assert.equal(message.clientHostname, 'out1.pigeon.test');
      assert.equal(message.secure, false);
      assert.match(message.raw.toString(), /^Subject: Hello from the sink test\r$/m);
      assert.equal(sink.connections, 1);
      assert.deepEqual(sink.sessions.map((s) => [s.remoteAddress, s.clientHostname]), [['127.0.0.2', 'out1.pigeon.test']]);
    });
  });

  it('does not offer STARTTLS with tls none, and upgrades with tls starttls', async () => {
    await withSink({}, async (sink) => {
      await assert.rejects(transport(sink, { requireTLS: true }).sendMail(mail('a@example.test')), /STARTTLS/);
    });
    await withSink({ tls: 'starttls' }, async (sink) => {
      await transport(sink, { tls: { rejectUnauthorized: false } }).sendMail(mail('a@example.test'));
      // the certificate is valid for localhost: a client that trusts it verifies it fully
      await transport(sink, { requireTLS: true, tls: { ca: testCertificate().cert, servername: 'localhost' } }).sendMail(mail('b@example.test'));
      const messages = await sink.waitFor(2);
      assert.deepEqual(messages.map((m) => m.secure), [true, true]);
      assert.equal(sink.sessions[0].secure, true);
    });
  });

  it('defers a recipient twice with 451, then accepts it; refuses another with 550 5.1.1', async () => {
    const reply: SinkOptions['reply'] = (ctx) => {
      if (ctx.stage !== 'rcpt') return undefined;
      if (ctx.rcpt === 'later@example.test' && ctx.attempt <= 2) return { code: 451, message: '4.3.0 try again later' };
      if (ctx.rcpt === 'nobody@example.test') return { code: 550, message: '5.1.1 no such user' };
      return undefined;
    };
    await withSink({ reply }, async (sink) => {
      const send = () => transport(sink).sendMail(mail(['later@example.test', 'nobody@example.test']));
      for (let attempt = 1; attempt <= 2; attempt++) {
        await assert.rejects(send(), (err: Error & { code?: string; rejectedErrors?: Array<{ responseCode: number; response: string }> }) => {
          assert.equal(err.code, 'EENVELOPE');
          assert.deepEqual(err.rejectedErrors?.map((e) => e.response), ['451 4.3.0 try again later', '550 5.1.1 no such user']);
          return true;
        });
      }
      const info = await send();
      assert.deepEqual(info.accepted, ['later@example.test']);
      assert.deepEqual(info.rejected, ['nobody@example.test']);
      const [message] = await sink.waitFor(1);
      assert.deepEqual(message.rcptTo, ['later@example.test']);
    });
  });

  it('refuses at connect with 421 and at end of data with 554', async () => {
    await withSink({ reply: (ctx) => (ctx.stage === 'connect' ? { code: 421, message: '4.7.0 too many connections' } : undefined) }, async (sink) => {
      await assert.rejects(transport(sink).sendMail(mail('a@example.test')), { responseCode: 421 });
    });
    await withSink({ reply: (ctx) => (ctx.stage === 'data' ? { code: 554, message: '5.7.1 spam' } : undefined) }, async (sink) => {
      await assert.rejects(transport(sink).sendMail(mail('a@example.test')), { responseCode: 554, response: '554 5.7.1 spam' });
      assert.equal(sink.messages.length, 0);
      assert.equal(sink.unaccepted[0].outcome, 'rejected');
      assert.match(sink.unaccepted[0].raw.toString(), /Just a body/);
    });
  });

  it('refuses a message over its SIZE', async () => {
    await withSink({ size: 1000 }, async (sink) => {
      await assert.rejects(transport(sink).sendMail(mail('a@example.test', { text: 'x'.repeat(5000) })), { responseCode: 552 });
    });
  });

  it('stalls in DATA until the client times out', async () => {
    await withSink({ stallInData: true }, async (sink) => {
      await assert.rejects(transport(sink, { socketTimeout: 300 }).sendMail(mail('a@example.test')), { code: 'ETIMEDOUT' });
      assert.equal(sink.unaccepted[0].outcome, 'stalled');
    });
  });

  it('drops the connection before its reply to DATA', async () => {
    await withSink({ dropAfterData: 'before-reply' }, async (sink) => {
      await assert.rejects(transport(sink).sendMail(mail('a@example.test')), { code: 'ECONNECTION' });
      assert.equal(sink.messages.length, 0);
      assert.equal(sink.unaccepted[0].outcome, 'dropped');
    });
  });

  it('drops the connection after its 250, the message counting as accepted', async () => {
    await withSink({ dropAfterData: 'after-reply', reply: () => ({ code: 250, message: 'queued as X1' }) }, async (sink) => {
      const info = await transport(sink).sendMail(mail('a@example.test'));
      assert.equal(info.response, '250 queued as X1');
      assert.equal(sink.messages.length, 1);
    });
  });

  it('waitFor rejects with a clear message when too few messages arrive', async () => {
    await withSink({}, async (sink) => {
      await assert.rejects(sink.waitFor(1, 50), /expected 1 message\(s\) within 50 ms, got 0/);
    });
  });
});
