/**
 * SMTP submission benchmark: a ~5 KB message relayed with an API key over
 * pooled nodemailer connections (several messages per connection, as an
 * application's mailer does) against the app in a child process
 * (bench/server.ts) on a fresh SQLite database with synchronous=FULL. For each
 * concurrency (connections) it reports accepted messages per second, p50/p99
 * from the start of a sendMail to its 250, and the server's peak RSS. Only
 * the accept path is measured: the server's workers are stopped.
 */
import os from 'node:os';
import nodemailer from 'nodemailer';
import type { ServerReady } from './server';
import { forkBenchServer } from './child';

interface Options {
  seconds: number;
  concurrency: number[];
  tls: boolean;
}

function parseOptions(args: string[]): Options {
  const get = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  return {
    seconds: Number(get('seconds') ?? 2.5),
    concurrency: (get('concurrency') ?? '1,10,50').split(',').map(Number),
    tls: get('tls') === 'on',
  };
}

interface Server {
  ready: ServerReady;
  rssKb(): Promise<number>;
  stop(): Promise<void>;
}

async function startServer(config: Record<string, unknown>): Promise<Server> {
  const bench = await forkBenchServer<ServerReady>('server.js', [JSON.stringify(config)], 'inherit');
  return { ready: bench.ready, rssKb: async () => (await bench.stats()).maxRssKb, stop: bench.stop };
}

const paragraph = 'Thank you for your order A-10042. Your items ship within two working days; we will send tracking details as soon as the parcel leaves our warehouse.\r\n';
const MESSAGE = {
  from: 'Shop <orders@example.com>',
  to: 'customer@example.org',
  subject: 'Order A-10042 confirmed',
  text: paragraph.repeat(34),
  headers: { 'X-Pigeon-Tags': 'bench', 'X-Pigeon-Metadata': '{"source":"bench"}' },
};

async function load(server: Server, concurrency: number, seconds: number, tls: boolean): Promise<{ sent: number; errors: number; seconds: number; latenciesMs: number[] }> {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1', port: server.ready.smtpPort, secure: false, ignoreTLS: !tls, tls: { rejectUnauthorized: false },
    auth: { user: 'apikey', pass: server.ready.key }, pool: true, maxConnections: concurrency, maxMessages: Infinity,
  });
  const latenciesMs: number[] = [];
  let errors = 0;
  const started = performance.now();
  const end = started + seconds * 1000;
  const loop = async () => {
    while (performance.now() < end) {
      const t0 = performance.now();
      try {
        await transport.sendMail(MESSAGE);
        latenciesMs.push(performance.now() - t0);
      } catch (err) {
        if (errors++ === 0) console.error(`first error: ${(err as Error).message}`);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  transport.close();
  return { sent: latenciesMs.length, errors, seconds: (performance.now() - started) / 1000, latenciesMs };
}

const percentile = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] : NaN);

export async function run(args: string[]): Promise<void> {
  const options = parseOptions(args);
  console.log(`smtp submission benchmark: node ${process.version}, ${os.cpus().length} cores, load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  console.log(`~5 KB message, 1 recipient, live key, AUTH PLAIN${options.tls ? ' after STARTTLS' : ' without TLS'}, pooled connections, SQLite synchronous=FULL\n`);
  console.log(['connections', 'msgs/s', 'p50 ms', 'p99 ms', 'errors', 'peak RSS MB'].join('\t'));
  for (const concurrency of options.concurrency) {
    const server = await startServer({ smtp: { submission: { allowInsecureAuth: true, maxConnectionsPerClient: 1000 } } });
    await load(server, concurrency, 0.3, options.tls);
    const r = await load(server, concurrency, options.seconds, options.tls);
    const rss = await server.rssKb();
    await server.stop();
    const sorted = [...r.latenciesMs].sort((a, b) => a - b);
    console.log([concurrency, (r.sent / r.seconds).toFixed(0), percentile(sorted, 0.5).toFixed(1), percentile(sorted, 0.99).toFixed(1), r.errors, (rss / 1024).toFixed(0)].join('\t'));
  }
}
