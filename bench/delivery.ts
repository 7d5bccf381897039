/**
 * Delivery benchmark, end to end: N live messages of a stated size are sent
 * through POST /v1/messages/send to the appliance (a child process, see
 * delivery-server.ts), which DKIM-signs them and delivers them over SMTP to a
 * loopback sink (smtp-server) found through a loopback DNS server. Reports
 * delivered/s, accept-to-delivery p50/p99, the server's peak RSS and CPU, and
 * the connections used — with SMTP connections reused and not reused — plus
 * the cost of one DKIM signature.
 *
 *   node dist/bench/run.js delivery [--messages=2000] [--size=5000] [--concurrency=20] [--reuse=both|on|off]
 *   node dist/bench/delivery.js …   (same, standalone)
 */
import { fork, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { signMessage } from '../src/delivery/dkim';
import { ApiClient } from '../test/support/app';
import { startDnsServer, type TestDnsServer } from '../test/support/dns-server';
import { startSmtpSink, type SmtpSink } from '../test/support/smtp-sink';
import { addDomain, publish, verify } from '../test/domains/helpers';
import type { DeliveryServerReady } from './delivery-server';

interface Options {
  messages: number;
  size: number;
  concurrency: number;
  reuse: boolean[];
}

function parseOptions(args: string[]): Options {
  const get = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  const reuse = get('reuse') ?? 'both';
  return {
    messages: Number(get('messages') ?? 2000),
    size: Number(get('size') ?? 5000),
    concurrency: Number(get('concurrency') ?? 20),
    reuse: reuse === 'both' ? [true, false] : [reuse === 'on'],
  };
}

interface Server {
  url: string;
  key: string;
  stats(): Promise<{ maxRssKb: number; cpuMs: number }>;
  stop(): Promise<void>;
}

function startServer(config: Record<string, unknown>): Promise<Server> {
  const child: ChildProcess = fork(path.join(__dirname, 'delivery-server.js'), [JSON.stringify(config)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const next = <T>(type: string) =>
    new Promise<T>((resolve, reject) => {
      const onMessage = (m: { type: string }) => {
        if (m.type !== type) return;
        child.off('message', onMessage);
        resolve(m as T);
      };
      child.on('message', onMessage);
      child.once('exit', (code) => reject(new Error(`bench server exited with ${code}`)));
    });
  return next<DeliveryServerReady>('ready').then((ready) => ({
    url: ready.url,
    key: ready.key,
    stats: () => {
      const answer = next<{ maxRssKb: number; cpuMs: number }>('stats');
      child.send({ type: 'stats' });
      return answer;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.send({ type: 'stop' });
      }),
  }));
}

/** A live key and a verified sending domain, set up through the API as a user would. */
async function prepareAccount(server: Server, dns: TestDnsServer): Promise<string> {
  const admin = new ApiClient(server.url, server.key);
  const key = await admin.post('/v1/api-keys', { name: 'bench', mode: 'live', scopes: ['messages:send', 'messages:read'] });
  if (key.status !== 201) throw new Error(`key: ${key.status} ${key.text}`);
  publish(dns, await addDomain(admin, 'shop.bench'));
  const domain = await verify(admin, 'shop.bench');
  if (domain.status !== 'verified') throw new Error(`shop.bench did not verify: ${JSON.stringify(domain.dns_records)}`);
  return key.body.key as string;
}

function payload(i: number, size: number): Buffer {
  const line = 'Your order has shipped and will arrive within two working days. Thank you for shopping with us.\n';
  return Buffer.from(
    JSON.stringify({
      from: 'Shop <orders@shop.bench>',
      to: [`customer${i}@dest.bench`],
      subject: `Order A-${10000 + i} shipped`,
      text: line.repeat(Math.max(1, Math.ceil(size / line.length))).slice(0, size),
      tags: ['bench'],
    }),
  );
}

function post(agent: http.Agent, url: URL, key: string, body: Buffer): Promise<{ status: number; ids: string[] }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { agent, host: url.hostname, port: url.port, path: '/v1/messages/send', method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': body.length } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const ids = res.statusCode === 202 ? (JSON.parse(Buffer.concat(chunks).toString()).data as Array<{ id: string }>).map((d) => d.id) : [];
          resolve({ status: res.statusCode ?? 0, ids });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

interface RunResult {
  label: string;
  messages: number;
  acceptSeconds: number;
  deliverSeconds: number;
  p50: number;
  p99: number;
  maxRssKb: number;
  cpuMs: number;
  connections: number;
}

async function runOnce(opts: Options, reuse: boolean): Promise<RunResult> {
  const n = reuse ? opts.messages : Math.min(opts.messages, 500);
  const sink: SmtpSink = await startSmtpSink({ host: '127.0.0.1' });
  const dns = await startDnsServer({ 'dest.bench': [{ type: 'MX', data: { preference: 10, exchange: 'mx.dest.bench' } }], 'mx.dest.bench': [{ type: 'A', data: '127.0.0.1' }] });
  const server = await startServer({
    hostname: 'mta.bench',
    dns: { servers: [dns.address] },
    delivery: { port: sink.port, messagesPerConnection: reuse ? 100 : 1 },
    ips: [{ address: '127.0.0.1', hostname: 'out.mta.bench' }],
  });
  try {
    const key = await prepareAccount(server, dns);
    const url = new URL(server.url);
    const agent = new http.Agent({ keepAlive: true, maxSockets: opts.concurrency });
    const acceptedAt = new Map<string, number>();
    const started = performance.now();
    const startedWall = Date.now();
    let next = 0;
    const worker = async () => {
      while (next < n) {
        const res = await post(agent, url, key, payload(next++, opts.size));
        if (res.status !== 202) throw new Error(`send answered ${res.status}`);
        for (const id of res.ids) acceptedAt.set(id, Date.now());
      }
    };
    await Promise.all(Array.from({ length: opts.concurrency }, worker));
    const acceptSeconds = (performance.now() - started) / 1000;
    await sink.waitFor(n, 600_000);
    const latencies = sink.messages.map((m) => {
      const id = /^b\+(msg_[0-9a-z]{26})-/.exec(m.mailFrom)?.[1] ?? '';
      return Math.max(0, m.receivedAt - (acceptedAt.get(id) ?? m.receivedAt));
    });
    latencies.sort((a, b) => a - b);
    const lastArrival = Math.max(...sink.messages.map((m) => m.receivedAt));
    const stats = await server.stats();
    agent.destroy();
    return {
      label: reuse ? 'reuse (100 msgs/connection)' : 'no reuse (1 msg/connection)',
      messages: n,
      acceptSeconds,
      deliverSeconds: (lastArrival - startedWall) / 1000,
      p50: latencies[Math.floor(latencies.length * 0.5)],
      p99: latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))],
      maxRssKb: stats.maxRssKb,
      cpuMs: stats.cpuMs,
      connections: sink.connections,
    };
  } finally {
    await server.stop();
    await sink.close();
    await dns.close();
  }
}

/** What one DKIM signature of a message of this size costs on this machine, on the main thread. */
async function signingCost(size: number): Promise<string[]> {
  const raw = Buffer.from(`From: a@shop.bench\r\nTo: b@dest.bench\r\nSubject: x\r\n\r\n${'x'.repeat(size)}\r\n`);
  const lines: string[] = [];
  for (const algorithm of ['rsa', 'ed25519'] as const) {
    const pair = algorithm === 'rsa' ? crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }) : crypto.generateKeyPairSync('ed25519');
    const key = { domain: 'shop.bench', selector: 's', algorithm, privateKeyPem: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
    const count = 300;
    const started = performance.now();
    for (let i = 0; i < count; i++) await signMessage(raw, key, Date.now());
    lines.push(`${algorithm === 'rsa' ? 'RSA-2048' : 'Ed25519'}: ${((performance.now() - started) / count).toFixed(2)} ms per signature`);
  }
  return lines;
}

export async function run(args: string[]): Promise<void> {
  const opts = parseOptions(args);
  console.log(`delivery benchmark: ${opts.messages} messages of ~${opts.size} bytes of text, 1 recipient each, ${opts.concurrency} concurrent API clients`);
  console.log(`machine: ${os.cpus().length} cores, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}, database.synchronous=FULL`);
  console.log('DKIM cost (mailauth dkimSign): ' + (await signingCost(opts.size)).join(', '));
  const rows: RunResult[] = [];
  for (const reuse of opts.reuse) rows.push(await runOnce(opts, reuse));
  console.log('');
  console.log('| SMTP connections | messages | accepted/s | delivered/s | accept→delivery p50 | p99 | connections | server peak RSS | server CPU |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(
      `| ${r.label} | ${r.messages} | ${(r.messages / r.acceptSeconds).toFixed(0)} | ${(r.messages / r.deliverSeconds).toFixed(0)} | ${r.p50} ms | ${r.p99} ms | ${r.connections} | ${(r.maxRssKb / 1024).toFixed(0)} MB | ${(r.cpuMs / 1000).toFixed(1)} s |`,
    );
  }
  console.log('');
  console.log('delivered/s counts from the first send to the last arrival at the sink. The sink is smtp-server, which waits');
  console.log('100 ms before every greeting: without reuse each connection carries one message, so at most');
  console.log('delivery.maxConnectionsPerDomain (5) connections × ~9 greetings/s bound that row, whatever the MTA does.');
}

if (require.main === module) {
  run(process.argv.slice(2)).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
