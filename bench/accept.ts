/**
 * Accept benchmark: POST /v1/messages/send over HTTP against the app running
 * in a child process (bench/server.ts), on a fresh SQLite database with the
 * default fsync policy (synchronous=FULL). For 1 and 10 recipients at
 * concurrency 1, 10 and 50 it reports accepted requests and messages per
 * second, p50/p99 latency and the server's peak RSS — with group commit on,
 * off, or both for comparison. A fresh server per row keeps rows independent.
 */
import http from 'node:http';
import os from 'node:os';
import type { ServerReady } from './server';
import { forkBenchServer } from './child';

interface Options {
  seconds: number;
  warmupSeconds: number;
  serverWarmupSeconds: number;
  groupCommit: boolean[];
  windowMs: number;
  recipients: number[];
  concurrency: number[];
}

function parseOptions(args: string[]): Options {
  const get = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  const gc = get('group-commit') ?? 'both';
  const list = (v: string | undefined, d: number[]) => (v ? v.split(',').map(Number) : d);
  return {
    seconds: Number(get('seconds') ?? 2),
    warmupSeconds: 0.3,
    serverWarmupSeconds: 2,
    groupCommit: gc === 'both' ? [true, false] : [gc === 'on'],
    windowMs: Number(get('window-ms') ?? 0),
    recipients: list(get('recipients'), [1, 10]),
    concurrency: list(get('concurrency'), [1, 10, 50]),
  };
}

interface Stats {
  maxRssKb: number;
  cpuMs: number;
  groups: GroupCounters;
}

interface Server {
  url: URL;
  metricsUrl: string;
  key: string;
  stats(): Promise<Stats>;
  stop(): Promise<void>;
}

async function startServer(config: Record<string, unknown>): Promise<Server> {
  const bench = await forkBenchServer<ServerReady>('server.js', [JSON.stringify(config)], 'inherit');
  const server: Server = {
    url: new URL(bench.ready.url),
    metricsUrl: bench.ready.metricsUrl,
    key: bench.ready.key,
    stats: async () => {
      const [stats, groups] = await Promise.all([bench.stats(), groupCounters(server)]);
      return { ...stats, groups };
    },
    stop: bench.stop,
  };
  return server;
}

/** A typical transactional message: about 5 KB of JSON with template values. */
function payload(recipients: number): Buffer {
  const paragraph = '<p>Thank you for your order {{order}}, {{name}}. Your items ship within two working days; we will send tracking details as soon as the parcel leaves our warehouse.</p>';
  return Buffer.from(JSON.stringify({
    from: 'Shop <orders@example.com>',
    to: Array.from({ length: recipients }, (_, i) => `customer${i}@example.org`),
    subject: 'Order {{order}} confirmed',
    html: `<html><body><h1>Hello {{name}}</h1>${paragraph.repeat(25)}</body></html>`,
    text: 'Hello {{name}}, your order {{order}} is confirmed.',
    template_data: { name: 'Ada Lovelace', order: 'A-10042' },
    tags: ['bench'],
    metadata: { source: 'bench' },
  }));
}

function post(agent: http.Agent, server: Server, body: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      agent, host: server.url.hostname, port: server.url.port, path: '/v1/messages/send', method: 'POST',
      headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/json', 'content-length': body.length },
    }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  latenciesMs: number[];
}

async function load(server: Server, body: Buffer, concurrency: number, seconds: number): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const latenciesMs: number[] = [];
  let errors = 0;
  const started = performance.now();
  const end = started + seconds * 1000;
  const loop = async () => {
    while (performance.now() < end) {
      const t0 = performance.now();
      const status = await post(agent, server, body);
      if (status === 202) latenciesMs.push(performance.now() - t0);
      else errors++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  agent.destroy();
  return { requests: latenciesMs.length, errors, seconds: (performance.now() - started) / 1000, latenciesMs };
}

interface GroupCounters {
  sum: number;
  count: number;
}

/** The server's own group-commit metrics (messages and transactions so far). */
async function groupCounters(server: Server): Promise<GroupCounters> {
  const text = await (await fetch(server.metricsUrl)).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  return { sum: value('pigeon_writer_commit_weight_sum'), count: value('pigeon_writer_commit_weight_count') };
}

/** Mean messages per accept transaction since `before`. */
async function groupStats(server: Server, before: GroupCounters): Promise<number> {
  const now = await groupCounters(server);
  return (now.sum - before.sum) / (now.count - before.count);
}

const percentile = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] : NaN);

export async function run(args: string[]): Promise<void> {
  const options = parseOptions(args);
  console.log(`accept benchmark: node ${process.version}, ${os.cpus().length} cores, load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  console.log('POST /v1/messages/send, ~5 KB JSON, live key, SQLite synchronous=FULL, client and server in separate processes\n');
  const header = ['group commit', 'rcpts', 'conc', 'req/s', 'msgs/s', 'p50 ms', 'p99 ms', 'errors', 'peak RSS MB', 'msgs/commit', 'server CPU ms/req'];
  console.log(header.join('\t'));
  for (const groupCommit of options.groupCommit) {
    // One server per commit mode, warmed up first: a cold process spends its first seconds compiling (JIT).
    const server = await startServer({ messages: { groupCommit, groupCommitWindowMs: options.windowMs } });
    await load(server, payload(1), 10, options.serverWarmupSeconds);
    for (const recipients of options.recipients) {
      for (const concurrency of options.concurrency) {
        const body = payload(recipients);
        await load(server, body, concurrency, options.warmupSeconds);
        const before = await server.stats();
        const r = await load(server, body, concurrency, options.seconds);
        const after = await server.stats();
        const groups = await groupStats(server, before.groups);
        const sorted = [...r.latenciesMs].sort((a, b) => a - b);
        const rps = r.requests / r.seconds;
        console.log([groupCommit ? 'on' : 'off', recipients, concurrency, rps.toFixed(0), (rps * recipients).toFixed(0),
          percentile(sorted, 0.5).toFixed(1), percentile(sorted, 0.99).toFixed(1), r.errors, (after.maxRssKb / 1024).toFixed(0),
          groups.toFixed(1), ((after.cpuMs - before.cpuMs) / r.requests).toFixed(2)].join('\t'));
      }
    }
    await server.stop();
  }
}
