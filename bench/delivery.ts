/**
 * Delivery benchmark. Live messages of a stated size go through POST
 * /v1/messages/send to the appliance (a child process), which DKIM-signs them
 * and delivers them over SMTP to a loopback sink (smtp-server) found through a
 * loopback DNS server (see delivery-harness.ts). Three rows:
 *
 * - end to end, SMTP connections reused (up to 100 messages each);
 * - end to end, one message per connection;
 * - the MTA alone: a backlog accepted while delivery was stopped, drained by a
 *   freshly started appliance.
 *
 * Each reports delivered/s, accept-to-delivery p50/p99 (end to end rows), the
 * server's peak RSS and CPU, its CPU per message (the figure that holds on a
 * loaded, shared machine, where rates swing with the neighbours), and
 * connections used; plus the cost of one DKIM signature on this machine.
 *
 *   node dist/bench/run.js delivery [--messages=2000] [--size=5000] [--concurrency=20] [--rows=reuse,no-reuse,backlog]
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { signMessage } from '../src/delivery/dkim';
import { idOf, percentile, prepareAccount, sendAll, startRecipientSide, startServer } from './delivery-harness';

interface Options {
  messages: number;
  size: number;
  concurrency: number;
  rows: string[];
}

function parseOptions(args: string[]): Options {
  const get = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  return {
    messages: Number(get('messages') ?? 2000),
    size: Number(get('size') ?? 5000),
    concurrency: Number(get('concurrency') ?? 20),
    rows: (get('rows') ?? 'reuse,no-reuse,backlog').split(','),
  };
}

interface Row {
  label: string;
  messages: number;
  acceptedPerSecond: number | null;
  deliveredPerSecond: number;
  p50: number | null;
  p99: number | null;
  connections: number;
  maxRssKb: number;
  cpuMs: number;
}

const serverConfig = (dnsAddress: string, port: number, messagesPerConnection: number) => ({
  hostname: 'mta.bench',
  dns: { servers: [dnsAddress] },
  // the recipient side is a loopback sink
  delivery: { port, messagesPerConnection, allowPrivateTargets: true },
  ips: [{ address: '127.0.0.1', hostname: 'out.mta.bench' }],
});

/** Sending and delivering at once, as in production. */
async function endToEnd(opts: Options, reuse: boolean): Promise<Row> {
  const n = reuse ? opts.messages : Math.min(opts.messages, 500);
  const side = await startRecipientSide();
  const server = await startServer(serverConfig(side.dns.address, side.sink.port, reuse ? 100 : 1));
  try {
    const key = await prepareAccount(server, side.dns);
    const started = Date.now();
    const acceptedAt = await sendAll(server, key, n, opts.size, opts.concurrency);
    const acceptSeconds = (Date.now() - started) / 1000;
    await side.sink.waitFor(n, 600_000);
    const latencies = side.sink.messages.map((m) => Math.max(0, m.receivedAt - (acceptedAt.get(idOf(m.mailFrom)) ?? m.receivedAt))).sort((a, b) => a - b);
    const last = Math.max(...side.sink.messages.map((m) => m.receivedAt));
    const stats = await server.stats();
    return {
      label: reuse ? 'end to end, reuse (100 msgs/connection)' : 'end to end, no reuse (1 msg/connection)',
      messages: n,
      acceptedPerSecond: n / acceptSeconds,
      deliveredPerSecond: n / ((last - started) / 1000),
      p50: percentile(latencies, 0.5),
      p99: percentile(latencies, 0.99),
      connections: side.sink.connections,
      ...stats,
    };
  } finally {
    await server.stop();
    await side.close();
  }
}

/** The MTA alone: accept a backlog with delivery stopped, then time a fresh appliance draining it. */
async function backlog(opts: Options): Promise<Row> {
  const side = await startRecipientSide();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-bench-backlog-'));
  const config = { ...serverConfig(side.dns.address, side.sink.port, 100), dataDir };
  try {
    const accepting = await startServer(config, 'accept-only');
    await sendAll(accepting, await prepareAccount(accepting, side.dns), opts.messages, opts.size, opts.concurrency);
    await accepting.stop();
    const started = Date.now();
    const draining = await startServer(config);
    await side.sink.waitFor(opts.messages, 600_000);
    const last = Math.max(...side.sink.messages.map((m) => m.receivedAt));
    const stats = await draining.stats();
    await draining.stop();
    return {
      label: 'MTA alone: drain a backlog (reuse)',
      messages: opts.messages,
      acceptedPerSecond: null,
      deliveredPerSecond: opts.messages / ((last - started) / 1000),
      p50: null,
      p99: null,
      connections: side.sink.connections,
      ...stats,
    };
  } finally {
    await side.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** What one DKIM signature of a message of this size costs on this machine. */
async function signingCost(size: number): Promise<string> {
  const raw = Buffer.from(`From: a@shop.bench\r\nTo: b@dest.bench\r\nSubject: x\r\n\r\n${'x'.repeat(size)}\r\n`);
  const parts: string[] = [];
  for (const algorithm of ['rsa', 'ed25519'] as const) {
    const pair = algorithm === 'rsa' ? crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }) : crypto.generateKeyPairSync('ed25519');
    const key = { domain: 'shop.bench', selector: 's', algorithm, privateKeyPem: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
    const started = performance.now();
    for (let i = 0; i < 300; i++) await signMessage(raw, key, Date.now());
    parts.push(`${algorithm === 'rsa' ? 'RSA-2048' : 'Ed25519'} ${((performance.now() - started) / 300).toFixed(2)} ms`);
  }
  return parts.join(', ');
}

const fmt = (v: number | null, unit = '') => (v === null ? '–' : `${Math.round(v)}${unit}`);

export async function run(args: string[]): Promise<void> {
  const opts = parseOptions(args);
  console.log(`delivery benchmark: ${opts.messages} live messages of ~${opts.size} bytes of text, 1 recipient each, ${opts.concurrency} concurrent API clients`);
  console.log(`machine: ${os.cpus().length} cores, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}; database.synchronous=FULL; DKIM on 1 worker thread`);
  console.log(`one DKIM signature (mailauth dkimSign, main thread): ${await signingCost(opts.size)}`);
  const rows: Row[] = [];
  if (opts.rows.includes('reuse')) rows.push(await endToEnd(opts, true));
  if (opts.rows.includes('no-reuse')) rows.push(await endToEnd(opts, false));
  if (opts.rows.includes('backlog')) rows.push(await backlog(opts));
  console.log('');
  console.log('| run | messages | accepted/s | delivered/s | accept→delivery p50 | p99 | SMTP connections | server peak RSS | server CPU | server CPU per message |');
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    const cells = [r.label, r.messages, fmt(r.acceptedPerSecond), fmt(r.deliveredPerSecond), fmt(r.p50, ' ms'), fmt(r.p99, ' ms'), r.connections, `${Math.round(r.maxRssKb / 1024)} MB`, `${(r.cpuMs / 1000).toFixed(1)} s`, `${(r.cpuMs / r.messages).toFixed(2)} ms`];
    console.log(`| ${cells.join(' | ')} |`);
  }
  console.log('');
  console.log('delivered/s counts from the first send (backlog: from the start of the draining process) to the last arrival.');
  console.log('Server CPU is the process\'s user+system time (backlog: the draining process, its start included) ÷ messages: the figure to compare on a shared machine.');
  console.log('The sink is smtp-server, which waits 100 ms before every greeting: with one message per connection at most');
  console.log('delivery.maxConnectionsPerDomain (5) connections x ~9 sessions/s bound the no-reuse row, whatever the MTA does.');
}
