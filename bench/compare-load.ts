/**
 * Load generator of `npm run bench compare`, run as a child process so it does
 * not share the appliance's or the harness's event loop. Its spec comes as JSON
 * in argv[2]; it answers `{type:'ready'}`, then runs once and sends
 * `{type:'result'}` (LoadResult) over IPC before it exits.
 *
 * - kind 'api': POST /v1/messages/send over keep-alive HTTP;
 * - kind 'smtp': nodemailer's pooled SMTP transport with a prebuilt raw
 *   message (no MIME building per send), AUTH PLAIN when a key is given.
 *
 * rate > 0 is open loop: message i is due at t0 + i/rate and its latency is
 * counted from that instant (no coordinated omission); rate 0 is closed loop
 * for `seconds`. Each message carries X-Bench-Sent (ms on the monotonic
 * clock, which all processes of one host share) for the latency sink.
 */
import http from 'node:http';
import nodemailer from 'nodemailer';

export interface LoadSpec {
  kind: 'api' | 'smtp';
  /** api: the appliance's base URL; smtp: the port on 127.0.0.1 */
  url?: string;
  port?: number;
  key?: string;
  from: string;
  size: number;
  concurrency: number;
  rate: number;
  count: number;
  seconds: number;
}

export interface LoadResult {
  type: 'result';
  accepted: number;
  errors: number;
  firstError: string;
  seconds: number;
  latenciesMs: number[];
  /** how late each message started against its due time (open loop): every connection was busy, or this process got no CPU */
  lagsMs: number[];
  /** i of every message answered 202/250 (its recipient is rcpt<i>@sink.test) */
  acceptedIndexes: number[];
}

export const monotonicMs = (): number => Number(process.hrtime.bigint()) / 1e6;

const line = 'Your order has shipped and will arrive within two working days. Thank you!';
const textOf = (size: number) => `${line}\n`.repeat(Math.ceil(size / (line.length + 1)));

type Send = (i: number, sentAt: number) => Promise<void>;

function apiSender(spec: LoadSpec): Send {
  const url = new URL(spec.url ?? '');
  if (!url.hostname.startsWith('127.')) throw new Error('loopback only');
  const agent = new http.Agent({ keepAlive: true, maxSockets: spec.concurrency });
  const text = textOf(spec.size);
  return (i, sentAt) => {
    const body = Buffer.from(JSON.stringify({ from: spec.from, to: [`rcpt${i}@sink.test`], subject: `bench ${i}`, text, headers: { 'X-Bench-Sent': sentAt.toFixed(3) } }));
    const headers = { authorization: `Bearer ${spec.key}`, 'content-type': 'application/json', 'content-length': body.length };
    return new Promise((resolve, reject) => {
      const req = http.request({ agent, host: url.hostname, port: url.port, path: '/v1/messages/send', method: 'POST', headers }, (res) => {
        let answer = '';
        res.on('data', (c: Buffer) => (answer += c.toString()));
        res.on('end', () => (res.statusCode === 202 ? resolve() : reject(new Error(`${res.statusCode} ${answer.slice(0, 200)}`))));
      });
      req.on('error', reject);
      req.end(body);
    });
  };
}

function smtpSender(spec: LoadSpec): Send {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1', port: spec.port, secure: false, ignoreTLS: true, pool: true, maxConnections: spec.concurrency, maxMessages: Infinity,
    ...(spec.key ? { auth: { user: 'apikey', pass: spec.key } } : {}),
  });
  const body = textOf(spec.size).replace(/\n/g, '\r\n');
  return async (i, sentAt) => {
    const to = `rcpt${i}@sink.test`;
    const raw = `From: ${spec.from}\r\nTo: ${to}\r\nSubject: bench ${i}\r\nDate: ${new Date().toUTCString()}\r\nMessage-ID: <${i}.${process.pid}@bench.test>\r\nX-Bench-Sent: ${sentAt.toFixed(3)}\r\n\r\n${body}`;
    await transport.sendMail({ envelope: { from: spec.from, to: [to] }, raw });
  };
}

async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const send = spec.kind === 'api' ? apiSender(spec) : smtpSender(spec);
  const [latenciesMs, lagsMs, acceptedIndexes]: number[][] = [[], [], []];
  let errors = 0;
  let firstError = '';
  let next = 0;
  const t0 = monotonicMs() + 100;
  const end = t0 + spec.seconds * 1000;
  const more = (i: number) => (spec.rate > 0 ? i < spec.count : monotonicMs() < end);
  const client = async () => {
    for (let i = next++; more(i); i = next++) {
      const due = spec.rate > 0 ? t0 + (i * 1000) / spec.rate : 0;
      const wait = due - monotonicMs();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const start = monotonicMs();
      const ref = spec.rate > 0 ? Math.min(start, due) : start; // late: count from when it was due
      if (spec.rate > 0) lagsMs.push(Math.max(0, start - due));
      try {
        await send(i, ref);
        latenciesMs.push(monotonicMs() - ref);
        acceptedIndexes.push(i);
      } catch (err) {
        if (errors++ === 0) firstError = (err as Error).message;
        await new Promise((r) => setTimeout(r, 10)); // a server that is down refuses at once: do not spin
      }
    }
  };
  const clients = spec.kind === 'smtp' && spec.rate === 0 ? spec.concurrency * 2 : spec.concurrency; // keep every pooled connection busy
  await Promise.all(Array.from({ length: clients }, client));
  return { type: 'result', accepted: latenciesMs.length, errors, firstError, seconds: (monotonicMs() - t0) / 1000, latenciesMs, lagsMs, acceptedIndexes };
}

if (require.main === module) {
  const spec = JSON.parse(process.argv[2] ?? '{}') as LoadSpec;
  process.send?.({ type: 'ready' });
  runLoad(spec).then(
    (result) => process.send?.(result, () => process.exit(0)),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
