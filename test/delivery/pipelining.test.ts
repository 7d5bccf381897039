/**
 * The outbound envelope pipelined (RFC 2920; src/delivery/pipelining.ts), against a scripted SMTP server on
 * loopback that sees every line as it arrives. Where the server offers PIPELINING it answers nothing until it
 * holds MAIL FROM, RCPT TO and DATA together: a client that waited for each reply would stall there. Without
 * PIPELINING, a second command before the first one's reply fails the test.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { attemptsOf, messageRow, pointMx, sendMessage, startWorld } from './world';

interface Script {
  pipelining: boolean;
  /** the replies to MAIL FROM, RCPT TO (by the command's line) and DATA */
  mail?: string;
  rcpt?: string | ((line: string) => string);
  data?: string;
  /** after the replies to MAIL FROM and RCPT TO, close without a reply to DATA: with a FIN, or a reset */
  closeBeforeData?: 'close' | 'reset';
}

interface ScriptedServer {
  port: number;
  /** every line received, in order, with the body's lines left out */
  lines: string[];
  /** a command that came before the reply to the one before it (no PIPELINING offered) */
  early: string[];
  delivered: number;
  connections: number;
  close(): Promise<void>;
}

const ENVELOPE = /^(MAIL FROM|RCPT TO|DATA$)/i;

async function startScriptedServer(script: Script): Promise<ScriptedServer> {
  const server: ScriptedServer = { port: 0, lines: [], early: [], delivered: 0, connections: 0, close: async () => undefined };
  const sockets = new Set<net.Socket>();
  const tcp = net.createServer((socket) => {
    sockets.add(socket);
    server.connections++;
    socket.on('close', () => sockets.delete(socket));
    let buffered = '';
    let inBody = false;
    let bodyLines = 0;
    let waiting = false; // a command's reply not sent yet (no PIPELINING)
    let held: string[] = []; // the envelope's commands held until DATA (PIPELINING)
    const reply = (text: string) => socket.write(`${text}\r\n`);
    const replyTo = (line: string): string => {
      if (/^MAIL FROM/i.test(line)) return script.mail ?? '250 2.1.0 Ok';
      if (/^RCPT TO/i.test(line)) return (typeof script.rcpt === 'function' ? script.rcpt(line) : script.rcpt) ?? '250 2.1.5 Ok';
      return script.data ?? '354 End data with <CR><LF>.<CR><LF>';
    };
    const onLine = (line: string) => {
      if (inBody) {
        if (line !== '.') return void bodyLines++;
        inBody = false;
        server.lines.push('.');
        if (bodyLines === 0) return reply('250 2.0.0 Ok: nothing'); // the end of an empty data
        bodyLines = 0;
        server.delivered++;
        return reply('250 2.0.0 Ok: queued');
      }
      server.lines.push(line);
      if (/^EHLO/i.test(line)) return reply(`250-mx.scripted.test\r\n${script.pipelining ? '250-PIPELINING\r\n' : ''}250-SIZE 10240000\r\n250 8BITMIME`);
      if (/^(RSET|NOOP)/i.test(line)) return reply('250 2.0.0 Ok');
      if (/^QUIT/i.test(line)) return reply('221 2.0.0 Bye');
      if (!ENVELOPE.test(line)) return reply('502 5.5.2 Error: command not recognized');
      if (!script.pipelining) {
        if (waiting) server.early.push(line);
        waiting = true;
        setTimeout(() => {
          waiting = false;
          const answer = replyTo(line);
          if (/^DATA/i.test(line) && answer.startsWith('354')) inBody = true;
          reply(answer);
        }, 20);
        return;
      }
      held.push(line);
      if (!/^DATA/i.test(line)) return;
      const answers = held.map(replyTo);
      held = [];
      if (script.closeBeforeData) {
        const replies = answers.slice(0, -1).map((a) => `${a}\r\n`).join('');
        if (script.closeBeforeData === 'close') socket.end(replies);
        else socket.write(replies, () => socket.resetAndDestroy());
        return;
      }
      if (answers[answers.length - 1].startsWith('354')) inBody = true;
      socket.write(answers.map((a) => `${a}\r\n`).join(''));
    };
    socket.on('data', (chunk) => {
      buffered += chunk.toString('latin1');
      let end: number;
      while ((end = buffered.indexOf('\r\n')) >= 0) {
        const line = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        onLine(line);
      }
    });
    socket.on('error', () => undefined);
    reply('220 mx.scripted.test ESMTP');
  });
  await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
  server.port = (tcp.address() as net.AddressInfo).port;
  server.close = () => {
    for (const s of sockets) s.destroy();
    return new Promise((resolve) => tcp.close(() => resolve()));
  };
  return server;
}

/** Sends to each recipient in turn (the MTA's pass for one before the next is sent); the first one's results. */
async function deliverOne(script: Script, recipients = ['ann@dest.test']) {
  const server = await startScriptedServer(script);
  const world = await startWorld({ port: server.port });
  try {
    pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.1' }]);
    const results = [];
    for (const to of recipients) {
      const id = await sendMessage(world, { to });
      await world.mta.runOnce();
      const [attempt] = await attemptsOf(world, id);
      results.push({ attempt, message: await messageRow(world, id) });
    }
    return { server, ...results[0], later: results.slice(1) };
  } finally {
    await world.stop();
    await server.close();
  }
}

const envelopeOf = (lines: string[]) => lines.filter((l) => ENVELOPE.test(l) || l === '.');

describe('the outbound envelope, pipelined when the server offers it', () => {
  it('MAIL FROM, RCPT TO and DATA leave together and the message is delivered', async () => {
    const { server, attempt, message } = await deliverOne({ pipelining: true });
    assert.equal(message.status, 'delivered', attempt?.transcript);
    assert.equal(server.delivered, 1);
    assert.deepEqual(envelopeOf(server.lines).map((l) => l.split(':')[0]), ['MAIL FROM', 'RCPT TO', 'DATA', '.']);
    assert.match(attempt.transcript, /^C: MAIL FROM:<[^>]+> SIZE=\d+\nC: RCPT TO:<ann@dest\.test>\nC: DATA\nS: 250 2\.1\.0 Ok\nS: 250 2\.1\.5 Ok\nS: 354 /m);
  });

  it('without PIPELINING, each command waits for the reply to the one before', async () => {
    const { server, attempt, message } = await deliverOne({ pipelining: false });
    assert.equal(message.status, 'delivered', attempt?.transcript);
    assert.deepEqual(server.early, []);
    assert.match(attempt.transcript, /^C: MAIL FROM:<[^>]+> SIZE=\d+\nS: 250 2\.1\.0 Ok\nC: RCPT TO:<ann@dest\.test>\nS: 250 2\.1\.5 Ok\nC: DATA\nS: 354 /m);
  });

  it('a refused MAIL FROM is the outcome, with its own reply, and no body follows', async () => {
    const { server, attempt, message } = await deliverOne({ pipelining: true, mail: '550 5.7.1 sender refused', rcpt: '503 5.5.1 Error: need MAIL command', data: '503 5.5.1 Error: need RCPT command' });
    assert.equal(message.status, 'bounced');
    assert.equal(attempt.smtp_code, 550);
    assert.match(attempt.response, /sender refused/);
    assert.equal(server.delivered, 0);
    assert.ok(!server.lines.includes('.'), 'no data was sent');
  });

  it('a refused recipient with a 354 to DATA anyway: the data ends at once, empty, and the refusal is the outcome', async () => {
    const { server, attempt, message } = await deliverOne({ pipelining: true, rcpt: '450 4.2.0 mailbox busy', data: '354 go ahead' });
    assert.equal(message.status, 'deferred');
    assert.equal(attempt.outcome, 'deferred');
    assert.equal(attempt.smtp_code, 450);
    assert.equal(server.delivered, 0, 'nothing (an RSET, say) went into the data');
    const data = server.lines.indexOf('DATA');
    assert.equal(server.lines[data + 1], '.', 'the end of data right after DATA');
  });

  it('a server that refuses the recipient and closes before DATA\'s reply: the refusal is the outcome', async () => {
    const { server, attempt, message } = await deliverOne({ pipelining: true, rcpt: '550 5.1.1 no such user', closeBeforeData: 'close' });
    assert.equal(message.status, 'bounced', attempt?.transcript);
    assert.equal(attempt.smtp_code, 550);
    assert.match(attempt.response, /no such user/);
    assert.equal(server.delivered, 0);
  });

  it('after a refusal with a 354 anyway, the same connection carries the next message', async () => {
    const rcpt = (line: string) => (/busy@/.test(line) ? '450 4.2.0 mailbox busy' : '250 2.1.5 Ok');
    const { server, message, later } = await deliverOne({ pipelining: true, rcpt }, ['busy@dest.test', 'ann@dest.test']);
    assert.equal(message.status, 'deferred');
    assert.equal(later[0].message.status, 'delivered', later[0].attempt?.transcript);
    assert.equal(server.connections, 1, 'the connection stayed in step and was reused');
    assert.deepEqual(envelopeOf(server.lines).map((l) => l.split(':')[0]),
      ['MAIL FROM', 'RCPT TO', 'DATA', '.', 'MAIL FROM', 'RCPT TO', 'DATA', '.']);
    assert.ok(server.lines.indexOf('RSET') > server.lines.indexOf('.'), 'RSET after the end of the empty data');
    assert.equal(server.delivered, 1);
  });

  it('a refused DATA with the recipient taken is the outcome', async () => {
    const { server, attempt, message } = await deliverOne({ pipelining: true, data: '554 5.3.0 no thanks' });
    assert.equal(message.status, 'bounced', attempt?.transcript);
    assert.equal(attempt.smtp_code, 554);
    assert.equal(server.delivered, 0);
  });

  it('a close before DATA\'s reply with the recipient taken defers, with no reply to report', async () => {
    const { attempt, message } = await deliverOne({ pipelining: true, closeBeforeData: 'close' });
    assert.equal(message.status, 'deferred', attempt?.transcript);
    assert.equal(attempt.smtp_code, null);
  });

  it('a refusal, then a reset before DATA\'s reply: the refusal is the outcome, the reset noted', async () => {
    const { attempt, message } = await deliverOne({ pipelining: true, rcpt: '550 5.1.1 no such user', closeBeforeData: 'reset' });
    assert.equal(message.status, 'bounced', attempt?.transcript);
    assert.equal(attempt.smtp_code, 550);
    assert.match(attempt.transcript, /before the reply to DATA/);
  });
});
