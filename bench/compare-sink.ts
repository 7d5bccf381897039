/**
 * The latency sink of `npm run bench compare`, a child process: a minimal SMTP
 * server on 127.0.0.1 (port 0, told to the parent in `ready`) that answers
 * every command at once, reads the X-Bench-Sent header of each message (ms on
 * the monotonic clock, see compare-load.ts) and keeps accept→arrival latency
 * and each message's recipient.
 * `{type:'report'}` answers `{type:'report', count, latenciesMs}` and starts
 * a new count. Postfix and Pigeon deliver to the same sink.
 */
import net from 'node:net';
import { monotonicMs } from './compare-load';

export interface SinkReport {
  type: 'report';
  count: number;
  latenciesMs: number[];
  /** the recipient of each message, in arrival order */
  recipients: string[];
}

let count = 0;
let latenciesMs: number[] = [];
let recipients: string[] = [];

function arrived(data: string, rcpt: string): void {
  recipients.push(rcpt);
  const sent = /\r\nX-Bench-Sent: ([0-9.]+)/i.exec(`\r\n${data.slice(0, 8192)}`);
  if (sent) latenciesMs.push(monotonicMs() - Number(sent[1]));
  count++;
}

const EHLO = '250-latency-sink\r\n250-PIPELINING\r\n250-8BITMIME\r\n250 SIZE 52428800\r\n';

function session(sock: net.Socket): void {
  sock.setNoDelay(true);
  let buf = '';
  let data: string | null = null; // the message while in DATA
  let rcpt = '';
  sock.write('220 latency-sink ESMTP\r\n');
  sock.on('data', (chunk: Buffer) => {
    buf += chunk.toString('latin1');
    for (;;) {
      if (data !== null) {
        const end = buf.indexOf('\r\n.\r\n');
        if (end < 0) {
          const keep = Math.max(0, buf.length - 4); // the terminator may straddle two chunks
          [data, buf] = [data + buf.slice(0, keep), buf.slice(keep)];
          return;
        }
        arrived(data + buf.slice(0, end + 2), rcpt);
        [data, buf] = [null, buf.slice(end + 5)];
        sock.write('250 2.0.0 Ok: queued\r\n');
        continue;
      }
      const nl = buf.indexOf('\r\n');
      if (nl < 0) return;
      const verb = buf.slice(0, 4).toUpperCase();
      if (verb === 'RCPT') rcpt = /<([^>]*)>/.exec(buf.slice(0, nl))?.[1] ?? '';
      buf = buf.slice(nl + 2);
      if (verb === 'EHLO') sock.write(EHLO);
      else if (verb === 'DATA') {
        sock.write('354 End data with <CR><LF>.<CR><LF>\r\n');
        data = '';
      }
      else if (verb === 'QUIT') return void sock.end('221 2.0.0 Bye\r\n');
      else sock.write('250 2.0.0 Ok\r\n');
    }
  });
  sock.on('error', () => undefined);
}

if (require.main === module) {
  const server = net.createServer(session);
  server.listen(0, '127.0.0.1', () => process.send?.({ type: 'ready', port: (server.address() as net.AddressInfo).port }));
  process.on('message', (msg: { type: string }) => {
    if (msg.type === 'report') {
      process.send?.({ type: 'report', count, latenciesMs, recipients } satisfies SinkReport);
      [count, latenciesMs, recipients] = [0, [], []];
    }
    if (msg.type === 'stop') process.exit(0);
  });
}
