/**
 * `npm run bench compare`: the targets of the throughput issue, each with the
 * command that produced it and, where Postfix does the same job, Postfix's
 * figure from the same run (a throwaway instance relaying to the same sink).
 * Loopback only. The appliance, the sinks and the load generators are separate
 * processes; load comes from wrk and smtp-source (C) or compare-load.ts.
 * Postfix, smtp-source, smtp-sink and wrk are Debian packages (postfix, wrk)
 * that only this benchmark needs: rows that need a missing one say so and are
 * skipped. The `api` row also gives the stack's accept floor from the same run
 * (compare-api.ts). See docs/benchmarks.md.
 *
 *   npm run bench compare [-- --only=e2e,webhook,api,smtp,latency,queue,crash,statements,floor,nodes]
 *     [--rounds=2] [--seconds=8] [--warmup=15] [--messages=4000] [--connections=20] [--size=5120]
 *     [--rate=150] [--latency-messages=1500] [--queued=1000,1000000] [--burst=100] [--nodes=2]
 *
 * `nodes` is `e2e`'s Pigeon run on SQLite, on PostgreSQL with one node and
 * with --nodes nodes sharing it (skipped when PostgreSQL is not installed).
 *
 * Every throughput run first warms the server it measures with --warmup
 * seconds of the same load (compare-warmup.ts says why); --warmup=0 measures
 * freshly started processes.
 */
import { missingTools, loadAverage } from './compare-tools';
import { endToEnd, latency, smtpAccept, withWebhook } from './compare-throughput';
import { apiAccept } from './compare-api';
import { queued } from './compare-queue';
import { statements } from './compare-statements';
import { crash } from './compare-crash';
import { stackFloor } from './compare-floor';
import { nodes } from './compare-nodes';

export interface CompareOptions {
  only: string[];
  rounds: number;
  /** wrk / closed-loop duration */
  seconds: number;
  /** seconds of the same load, not counted, before each measured run (compare-warmup.ts) */
  warmup: number;
  /** messages smtp-source sends to Postfix per end-to-end run */
  postfixMessages: number;
  connections: number;
  size: number;
  rate: number;
  latencyMessages: number;
  queued: number[];
  burst: number;
  /** appliance processes on one PostgreSQL database in the `nodes` section */
  nodes: number;
}

export interface Row {
  target: string;
  postfix: string;
  pigeon: string;
  command: string;
}

const SECTIONS: Record<string, { title: string; tools: string[]; run: (o: CompareOptions) => Promise<Row | Row[]> }> = {
  e2e: { title: 'end to end: Postfix and Pigeon alternately, one smtp-sink', tools: ['postfix', 'smtp-source', 'smtp-sink', 'wrk'], run: endToEnd },
  webhook: { title: 'end to end with one webhook subscribed to every event', tools: ['smtp-sink', 'wrk'], run: withWebhook },
  api: { title: 'API accept with the MTA paused, alternately with the stack\'s accept floor', tools: ['smtp-sink', 'wrk'], run: apiAccept },
  smtp: { title: 'SMTP submission accept (a nodemailer pool in its own process, then smtp-source; Pigeon: AUTH, then a relay network)', tools: ['postfix', 'smtp-sink', 'smtp-source'], run: smtpAccept },
  latency: { title: 'latency at a fixed offered rate (open loop)', tools: ['postfix'], run: latency },
  queue: { title: 'a deep queue with the MTA paused', tools: ['wrk'], run: queued },
  crash: { title: 'kill -9 mid-burst, then restart', tools: [], run: crash },
  floor: { title: 'the stack\'s floor: Postfix, a database-less Node relay on the same libraries, and Pigeon, alternately', tools: ['postfix', 'smtp-source', 'smtp-sink', 'wrk'], run: stackFloor },
  statements: { title: 'SQL statements per message (in process, knex query events)', tools: [], run: statements },
  nodes: { title: 'end to end on SQLite, PostgreSQL with one node and with several nodes on one database', tools: ['smtp-sink', 'wrk'], run: nodes },
};

function parseOptions(args: string[]): CompareOptions {
  const get = (name: string, fallback: string) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
  return {
    only: get('only', Object.keys(SECTIONS).join(',')).split(','),
    rounds: Number(get('rounds', '2')),
    seconds: Number(get('seconds', '8')),
    warmup: Number(get('warmup', '15')),
    postfixMessages: Number(get('messages', '4000')),
    connections: Number(get('connections', '20')),
    size: Number(get('size', '5120')),
    rate: Number(get('rate', '150')),
    latencyMessages: Number(get('latency-messages', '1500')),
    queued: get('queued', '1000,1000000').split(',').map(Number),
    burst: Number(get('burst', '100')),
    nodes: Number(get('nodes', '2')),
  };
}

export async function run(args: string[]): Promise<void> {
  const o = parseOptions(args);
  const unknown = o.only.filter((s) => !SECTIONS[s]);
  if (unknown.length) throw new Error(`unknown section(s) ${unknown.join(', ')}; sections: ${Object.keys(SECTIONS).join(', ')}`);
  console.log(`compare: node ${process.version}, load average ${loadAverage()} at start; ${o.size}-byte messages, DKIM RSA-2048, synchronous=FULL (default); each throughput run after a ${o.warmup} s warm-up`);
  const rows: Row[] = [];
  for (const name of o.only) {
    const section = SECTIONS[name];
    console.log(`\n## ${section.title} (load average ${loadAverage()})`);
    const missing = missingTools(section.tools);
    if (missing.length) {
      console.log(`  skipped: ${missing.join(', ')} not installed (Debian: apt-get install --no-install-recommends postfix wrk)`);
      rows.push({ target: name, postfix: 'skipped', pigeon: `skipped: ${missing.join(', ')} missing`, command: `npm run bench compare -- --only=${name}` });
      continue;
    }
    rows.push(...[await section.run(o)].flat());
  }
  console.log(`\nload average at the end: ${loadAverage()}\n`);
  console.log('| target | Postfix | Pigeon | command |');
  console.log('|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.target} | ${r.postfix} | ${r.pigeon} | \`${r.command}\` |`);
}
