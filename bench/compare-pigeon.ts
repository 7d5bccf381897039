/**
 * Pigeon's side of `npm run bench compare`: the appliance in a child process
 * (delivery-server.ts) on a fresh database, a loopback DNS server that answers
 * the MX of sink.test with 127.0.0.1 and publishes shop.bench's records so it
 * verifies (DKIM RSA-2048, the default key), delivery.port pointed at the
 * given sink; plus the plumbing of the other child processes (load generator,
 * latency sink).
 */
import { fork } from 'node:child_process';
import path from 'node:path';
import { ApiClient } from '../test/support/app';
import { startDnsServer, type TestDnsServer } from '../test/support/dns-server';
import { prepareAccount, startServer, type Server } from './delivery-harness';
import type { LoadResult, LoadSpec } from './compare-load';
import type { SinkReport } from './compare-sink';

export const FROM = 'orders@shop.bench';

export interface Pigeon {
  server: Server;
  /** a live key with messages:send */
  sendKey: string;
  /** the live key with every scope */
  adminKey: string;
  /** the submission port */
  smtpPort: number;
  close(): Promise<void>;
  /** kill -9 of the appliance (and the DNS server closed) */
  kill(): Promise<void>;
}

export interface PigeonOptions {
  sinkPort: number;
  /** accept only: the delivery workers are stopped, accepted mail stays queued */
  paused?: boolean;
  /** a live send key bound to the relay network 127.0.0.1/32, so smtp-source (no AUTH) can submit */
  relayLoopback?: boolean;
  dataDir?: string;
  /** a send key from an earlier start on the same dataDir: its account and domain are already set up */
  sendKey?: string;
  /** merged over the bench config (e.g. database, node, ips for a node on PostgreSQL) */
  config?: Record<string, unknown>;
  /** a DNS server of an earlier start to share (another node on the same database); it stays open at close */
  dns?: TestDnsServer;
}

/** The loopback DNS server of the bench: sink.test's MX is 127.0.0.1; prepareAccount publishes shop.bench's records. */
export function startBenchDns(): Promise<TestDnsServer> {
  return startDnsServer({
    'sink.test': [{ type: 'MX', data: { preference: 10, exchange: 'mx.sink.test' } }],
    'mx.sink.test': [{ type: 'A', data: '127.0.0.1' }],
  });
}

export async function startPigeon(opts: PigeonOptions): Promise<Pigeon> {
  const dns = opts.dns ?? (await startBenchDns());
  const closeDns = () => (opts.dns ? Promise.resolve() : dns.close());
  const config = {
    hostname: 'mta.bench',
    dns: { servers: [dns.address] },
    // As many connections to the one sink as Postfix opens beside it with its defaults: all its mail goes to one
    // relayhost, so smtp_destination_concurrency_limit (= default_destination_concurrency_limit, 20) bounds its
    // deliveries; default_process_limit (100) bounds smtp processes over all destinations and is never reached
    // here. 100 in flight is not Postfix's figure: Pigeon reads and signs a message while it is in flight, which
    // Postfix did before queueing it, so more than 20 keep the 20 connections busy. Pigeon's own defaults (5 a
    // domain, 50 in flight) are kinder to real receivers than a throughput race needs.
    delivery: { port: opts.sinkPort, allowPrivateTargets: true, maxConnectionsPerDomain: 20, concurrency: 100 },
    webhooks: { allowPrivateTargets: true, allowHttp: true },
    smtp: { submission: { allowInsecureAuth: true, maxConnectionsPerClient: 1000 } },
    ips: [{ address: '127.0.0.1', hostname: 'out.mta.bench' }],
    ...(opts.dataDir ? { dataDir: opts.dataDir } : {}),
    ...opts.config,
  };
  const server = await startServer(config, opts.paused ? 'accept-only' : 'all', opts.relayLoopback);
  try {
    const sendKey = opts.sendKey ?? (await prepareAccount(server, dns));
    const close = async (how: 'stop' | 'kill') => {
      await server[how]();
      await closeDns();
    };
    return { server, sendKey, adminKey: server.key, smtpPort: server.smtpPort, close: () => close('stop'), kill: () => close('kill') };
  } catch (err) {
    await server.stop();
    await closeDns();
    throw err;
  }
}

/** Subscribes one webhook to every event (the appliance's live admin key). */
export async function subscribeWebhook(pigeon: Pigeon, url: string): Promise<void> {
  const res = await new ApiClient(pigeon.server.url, pigeon.adminKey).post('/v1/webhooks', { url, events: ['*'] });
  if (res.status !== 201) throw new Error(`webhook: ${res.status} ${res.text}`);
}

/** Runs compare-load.ts once in a child process and returns its result. */
export function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const child = fork(path.join(__dirname, 'compare-load.js'), [JSON.stringify(spec)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.on('message', (m: { type: string }) => m.type === 'result' && resolve(m as LoadResult));
    child.once('exit', (code) => code !== 0 && reject(new Error(`load generator exited with ${code}`)));
  });
}

export interface LatencySink {
  port: number;
  /** what arrived since the last report */
  report(): Promise<SinkReport>;
  stop(): void;
}

export async function startLatencySink(): Promise<LatencySink> {
  const child = fork(path.join(__dirname, 'compare-sink.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const next = <T>(type: string) => new Promise<T>((resolve) => {
    const on = (m: { type: string }) => m.type === type && (child.off('message', on), resolve(m as T));
    child.on('message', on);
  });
  const { port } = await next<{ port: number }>('ready');
  return {
    port,
    report() {
      const answer = next<SinkReport>('report');
      child.send({ type: 'report' });
      return answer;
    },
    stop: () => child.kill(),
  };
}
