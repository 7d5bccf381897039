/**
 * `npm run bench compare -- --only=nodes`: the end-to-end run of `compare e2e`
 * (same message size, wrk connections and seconds, one smtp-sink) on three
 * set-ups, back to back in each round: SQLite (one node), PostgreSQL with one
 * node, PostgreSQL with `--nodes` nodes (default 2) sharing one database.
 *
 * PostgreSQL is a throwaway server (test/support/postgres.ts: Debian's
 * binaries, a temp folder, a free loopback port, fsync off), with a fresh
 * database per run. Each node is an appliance process of its own with its own
 * dataDir, `node.id` and `ips` (127.0.0.2, 127.0.0.3, …: every loopback
 * address reaches the sink), and the same secret.key in every dataDir, as a
 * real second node needs (the DKIM private keys and webhook secrets in the
 * database are sealed with it). The load is split between the nodes' APIs:
 * one wrk per node in parallel, the connections shared out between them.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { databaseFor, postgresBin, startPostgresServer, type PostgresServer } from '../test/support/postgres';
import { FROM, startBenchDns, startPigeon, type Pigeon } from './compare-pigeon';
import { cpuMeter, loadAverage, startCountingSink, wrk, writeSendScript, type CountingSink } from './compare-tools';
import { median } from './compare-throughput';
import { warmUpViaWrk } from './compare-warmup';
import type { CompareOptions, Row } from './compare';

const r0 = (x: number) => Math.round(x).toString();

interface Setup {
  label: string;
  nodes: Pigeon[];
  close(): Promise<void>;
}

interface Measured {
  msgPerSecond: number;
  cpu: number;
  /** CPU time of the appliance processes (all nodes) per delivered message: less noisy than msg/s on a shared machine */
  cpuMsPerMessage: number;
  load: string;
}

/** One appliance on SQLite, as `compare e2e` runs it. */
async function sqliteSetup(sinkPort: number): Promise<Setup> {
  const pigeon = await startPigeon({ sinkPort });
  return { label: 'SQLite, 1 node', nodes: [pigeon], close: () => pigeon.close() };
}

/** `count` appliances on one fresh PostgreSQL database; node i sends from 127.0.0.(i+2) when there are several. */
async function postgresSetup(server: PostgresServer, sinkPort: number, count: number): Promise<Setup> {
  const dirs = Array.from({ length: count }, (_, i) => fs.mkdtempSync(path.join(os.tmpdir(), `pigeon-bench-pg${count}n${i}-`)));
  const master = crypto.randomBytes(32); // one secret.key for every node: what the operator copies to a second host
  for (const dir of dirs) fs.writeFileSync(path.join(dir, 'secret.key'), master, { mode: 0o600 });
  const url = databaseFor(server.adminUrl, dirs[0]);
  const dns = await startBenchDns();
  const nodes: Pigeon[] = [];
  const close = async () => {
    for (const node of [...nodes].reverse()) await node.close();
    await dns.close();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < count; i++) {
      const address = count === 1 ? '127.0.0.1' : `127.0.0.${i + 2}`;
      const config = { database: { client: 'postgres', url }, node: { id: `bench-${i + 1}` }, ips: [{ address, hostname: `out${i + 1}.mta.bench` }] };
      // The first node sets up the account and domain through its API; the others share them through the database.
      nodes.push(await startPigeon({ sinkPort, dataDir: dirs[i], dns, config, sendKey: nodes[0]?.sendKey }));
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { label: `PostgreSQL, ${count} node${count > 1 ? 's' : ''}`, nodes, close };
}

/** wrk on every node at once for o.seconds (the connections shared out); delivery timed from the first request to the last arrival. */
async function measure(setup: Setup, sink: CountingSink, o: CompareOptions): Promise<Measured> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-bench-wrk-'));
  try {
    const script = writeSendScript(dir, FROM, o.size);
    const n = setup.nodes.length;
    await warmUpViaWrk(setup.nodes.map((node) => ({ url: node.server.url, key: node.sendKey })), script, o, sink);
    const loadBefore = loadAverage();
    const cpuBefore = await appCpuMs(setup);
    const [base, cpu, t0] = [sink.count(), cpuMeter(), performance.now()];
    const runs = await Promise.all(setup.nodes.map((node, i) => {
      const connections = Math.floor(o.connections / n) + (i < o.connections % n ? 1 : 0);
      return wrk(node.server.url, script, connections, o.seconds, { KEY: node.sendKey });
    }));
    const accepted = runs.reduce((sum, w) => sum + w.requests - w.non2xx, 0);
    const refused = runs.reduce((sum, w) => sum + w.non2xx, 0);
    const got = (await sink.waitFor(base + accepted, 30_000)) - base;
    const seconds = (performance.now() - t0) / 1000;
    const busy = cpu();
    const appMs = (await appCpuMs(setup)) - cpuBefore;
    const load = `${loadBefore} → ${loadAverage()}`;
    const perNode = runs.map((w) => r0((w.requests - w.non2xx) / w.seconds)).join(' + ');
    console.log(`    ${setup.label}: ${accepted} accepted (wrk ×${n}, ${o.connections} connections in all, ${o.seconds} s; ${refused} refused), accept ${perNode} req/s, delivered ${got} in ${seconds.toFixed(1)} s = ${r0(got / seconds)} msg/s, cpu busy ${r0(busy)} %, appliance cpu ${(appMs / Math.max(1, got)).toFixed(2)} ms/msg, load average ${load}`);
    if (got < accepted) console.log(`    ${setup.label}: ${accepted - got} accepted messages had not arrived 30 s after the last arrival`);
    return { msgPerSecond: got / seconds, cpu: busy, cpuMsPerMessage: appMs / Math.max(1, got), load };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** CPU time (user + system) the setup's appliance processes have used so far. */
async function appCpuMs(setup: Setup): Promise<number> {
  const stats = await Promise.all(setup.nodes.map((node) => node.server.stats()));
  return stats.reduce((sum, s) => sum + s.cpuMs, 0);
}

async function runOnce(start: () => Promise<Setup>, sink: CountingSink, o: CompareOptions): Promise<Measured> {
  const setup = await start();
  try {
    return await measure(setup, sink, o);
  } finally {
    await setup.close();
  }
}

export async function nodes(o: CompareOptions): Promise<Row[]> {
  const command = `npm run bench compare -- --only=nodes --nodes=${o.nodes} --rounds=${o.rounds} --seconds=${o.seconds} --warmup=${o.warmup}`;
  if (!postgresBin()) {
    console.log('  skipped: PostgreSQL is not installed (apt-get install -y postgresql)');
    return [{ target: 'end to end on PostgreSQL', postfix: 'n/a', pigeon: 'skipped: postgresql missing', command }];
  }
  const [server, sink] = [await startPostgresServer(), await startCountingSink()];
  const setups: Array<{ label: string; start: () => Promise<Setup>; runs: Measured[] }> = [
    { label: 'SQLite, 1 node', start: () => sqliteSetup(sink.port), runs: [] },
    { label: 'PostgreSQL, 1 node', start: () => postgresSetup(server, sink.port, 1), runs: [] },
    { label: `PostgreSQL, ${o.nodes} nodes`, start: () => postgresSetup(server, sink.port, o.nodes), runs: [] },
  ];
  try {
    for (let round = 1; round <= o.rounds; round++) {
      console.log(`  round ${round}`);
      for (const s of setups) s.runs.push(await runOnce(s.start, sink, o));
    }
  } finally {
    await sink.stop();
    server.stop();
  }
  return setups.map((s) => ({
    target: `end to end msg/s, ${s.label}`,
    postfix: 'n/a',
    pigeon: `${r0(median(s.runs.map((r) => r.msgPerSecond)))} (median of ${o.rounds}; runs ${s.runs.map((r) => `${r0(r.msgPerSecond)} at cpu ${r0(r.cpu)} %, ${r.cpuMsPerMessage.toFixed(2)} ms/msg, load ${r.load}`).join('; ')})`,
    command,
  }));
}
