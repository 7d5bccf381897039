/**
 * Plumbing of the delivery benchmark: the appliance as a child process
 * (delivery-server.ts), a loopback MX (smtp-server sink) found through a
 * loopback DNS server, a live key and a verified sending domain set up through
 * the API, and a closed-loop HTTP load generator for POST /v1/messages/send.
 */
import http from 'node:http';
import { ApiClient } from '../test/support/app';
import { startDnsServer, type TestDnsServer } from '../test/support/dns-server';
import { startSmtpSink, type SmtpSink } from '../test/support/smtp-sink';
import { addDomain, publish, verify } from '../test/domains/helpers';
import type { DeliveryServerReady } from './delivery-server';
import { forkBenchServer, type ServerStats } from './child';

export interface Server {
  url: string;
  key: string;
  smtpPort: number;
  stats(): Promise<ServerStats>;
  stop(): Promise<void>;
  /** kill -9: no clean shutdown */
  kill(): Promise<void>;
}

/** `relayLoopback`: a live send key bound to the relay network 127.0.0.1/32 (submission without AUTH). */
export async function startServer(config: Record<string, unknown>, mode: 'all' | 'accept-only' = 'all', relayLoopback = false): Promise<Server> {
  const args = [JSON.stringify(config), mode, ...(relayLoopback ? ['relay-loopback'] : [])];
  const bench = await forkBenchServer<DeliveryServerReady>('delivery-server.js', args, 'ignore');
  return {
    url: bench.ready.url, key: bench.ready.key, smtpPort: bench.ready.smtpPort, stats: bench.stats, stop: bench.stop,
    kill() {
      return new Promise((resolve) => {
        bench.child.once('exit', () => resolve());
        bench.child.kill('SIGKILL');
      });
    },
  };
}

/** The recipient side: dest.bench's MX is a sink on 127.0.0.1. */
export async function startRecipientSide(): Promise<{ sink: SmtpSink; dns: TestDnsServer; close(): Promise<void> }> {
  const sink = await startSmtpSink({ host: '127.0.0.1' });
  const dns = await startDnsServer({
    'dest.bench': [{ type: 'MX', data: { preference: 10, exchange: 'mx.dest.bench' } }],
    'mx.dest.bench': [{ type: 'A', data: '127.0.0.1' }],
  });
  return { sink, dns, close: async () => (await sink.close(), await dns.close()) };
}

/** A live key and a verified sending domain, set up through the API as a user would. */
export async function prepareAccount(server: Server, dns: TestDnsServer): Promise<string> {
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

function post(agent: http.Agent, url: URL, key: string, body: Buffer): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': body.length };
    const req = http.request({ agent, host: url.hostname, port: url.port, path: '/v1/messages/send', method: 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        if (res.statusCode !== 202) return reject(new Error(`send answered ${res.statusCode}`));
        resolve((JSON.parse(Buffer.concat(chunks).toString()).data as Array<{ id: string }>).map((d) => d.id));
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Sends n one-recipient messages with `concurrency` clients; returns when each was accepted (ms, wall clock). */
export async function sendAll(server: Server, key: string, n: number, size: number, concurrency: number): Promise<Map<string, number>> {
  const url = new URL(server.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const acceptedAt = new Map<string, number>();
  let next = 0;
  const client = async () => {
    while (next < n) for (const id of await post(agent, url, key, payload(next++, size))) acceptedAt.set(id, Date.now());
  };
  await Promise.all(Array.from({ length: concurrency }, client));
  agent.destroy();
  return acceptedAt;
}

/** The message id a delivered message's VERP return path names. */
export const idOf = (mailFrom: string): string => /^b\+(msg_[0-9a-z]{26})-/.exec(mailFrom)?.[1] ?? '';

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
}
