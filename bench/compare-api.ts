/**
 * `npm run bench compare -- --only=api`: the send API's accept with the MTA
 * paused (nothing delivers; accepted mail stays queued), wrk with 50
 * connections, alternately against Pigeon and against the stack's accept
 * floor (accept-floor-server.ts: koa, koa-body and the MIME threads with
 * nothing else), `--rounds` times each (the order swapped every other round,
 * so a guest that drifts favours neither), so the two figures come from one
 * run on one machine. Each run prints req/s, wrk's p50/p99, the server
 * process's own CPU ms per accepted request (unlike req/s, that figure holds
 * on a shared, loaded machine) and the share of the run its main thread was
 * busy and, for Pigeon, its writer spent in transactions: which of the two
 * serial resources is the limit. The row gives each round's figures and
 * Pigeon's rate as a share of the floor's in the same round.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { forkBenchServer, type ServerStats } from './child';
import { FROM, startPigeon } from './compare-pigeon';
import { cpuMeter, startCountingSink, wrk, writeSendScript } from './compare-tools';
import { warmUpViaWrk, type MeasuredTarget } from './compare-warmup';
import type { CompareOptions, Row } from './compare';

const CONNECTIONS = 50;
const r0 = (x: number) => Math.round(x).toString();
const ms = (x: number) => `${x.toFixed(1)} ms`;

interface AcceptRun {
  rate: number;
  p99Ms: number;
  cpuMsPerRequest: number;
}

async function measure(target: MeasuredTarget, script: string, o: CompareOptions, label: string): Promise<AcceptRun> {
  await warmUpViaWrk([target], script, o);
  const [before, cpu] = [await target.stats(), cpuMeter()];
  const w = await wrk(target.url, script, CONNECTIONS, o.seconds, { KEY: target.key });
  const after = await target.stats();
  const accepted = w.requests - w.non2xx;
  const run = { rate: accepted / w.seconds, p99Ms: w.p99Ms, cpuMsPerRequest: (after.cpuMs - before.cpuMs) / Math.max(1, accepted) };
  console.log(`    ${label}: ${accepted} accepted, ${w.non2xx} refused, ${r0(run.rate)} req/s, p50 ${ms(w.p50Ms)} p99 ${ms(w.p99Ms)}, cpu busy ${r0(cpu())} %, its own process ${run.cpuMsPerRequest.toFixed(3)} CPU ms/request${shares(before, after, w.seconds)}`);
  return run;
}

/** Where the time went: the share of the run the main thread was busy and (Pigeon) its writer was in transactions. */
function shares(before: ServerStats, after: ServerStats, seconds: number): string {
  const share = (a?: number, b?: number) => (a === undefined || b === undefined ? undefined : `${r0((b - a) / (10 * seconds))} %`);
  const main = share(before.mainThreadBusyMs, after.mainThreadBusyMs);
  const writer = share(before.writerBusyMs, after.writerBusyMs);
  const commits = (after.writerCommits ?? 0) - (before.writerCommits ?? 0);
  return `${main ? `; main thread busy ${main}` : ''}${writer ? `, writer in transactions ${writer} (${commits} commits)` : ''}`;
}

async function pigeonRun(sinkPort: number, script: string, o: CompareOptions): Promise<AcceptRun> {
  const pigeon = await startPigeon({ sinkPort, paused: true });
  try {
    return await measure({ url: pigeon.server.url, key: pigeon.sendKey, stats: pigeon.server.stats }, script, o, 'Pigeon (MTA paused)');
  } finally {
    await pigeon.close();
  }
}

async function floorRun(script: string, o: CompareOptions): Promise<AcceptRun> {
  const server = await forkBenchServer<{ url: string }>('accept-floor-server.js', [], 'inherit');
  try {
    return await measure({ url: server.ready.url, key: 'none', stats: server.stats }, script, o, 'accept floor (koa + koa-body + MIME threads, no database)');
  } finally {
    await server.stop();
  }
}

export async function apiAccept(o: CompareOptions): Promise<Row> {
  const runs: Record<'pigeon' | 'floor', AcceptRun[]> = { pigeon: [], floor: [] };
  const sink = await startCountingSink(); // nothing reaches it: Pigeon's delivery needs a port to point at
  try {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-bench-wrk-'));
    try {
      const script = writeSendScript(dir, FROM, o.size);
      for (let round = 1; round <= o.rounds; round++) {
        console.log(`  round ${round}`);
        const floor = () => floorRun(script, o).then((r) => void runs.floor.push(r));
        const pigeon = () => pigeonRun(sink.port, script, o).then((r) => void runs.pigeon.push(r));
        for (const run of round % 2 ? [floor, pigeon] : [pigeon, floor]) await run();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  } finally {
    await sink.stop();
  }
  // Each round's own figures, not medians: with two rounds a median is one of them, and a rate from one run beside
  // the CPU figure of the other would describe neither.
  const list = (k: keyof typeof runs) => {
    const each = (f: (r: AcceptRun) => string) => runs[k].map(f).join(' · ');
    return `${each((r) => r0(r.rate))} req/s, p99 ${each((r) => r.p99Ms.toFixed(1))} ms, ${each((r) => r.cpuMsPerRequest.toFixed(2))} CPU ms/request`;
  };
  const ratios = runs.pigeon.map((r, i) => `${r0((100 * r.rate) / runs.floor[i].rate)} %`).join(' · ');
  console.log(`  Pigeon ${list('pigeon')}; the accept floor ${list('floor')}; Pigeon/floor per round ${ratios}`);
  return {
    target: 'API accept, MTA paused, wrk 50 conns (≥ 3000/s, p99 < 50 ms)',
    postfix: 'n/a (no HTTP API)',
    pigeon: `${list('pigeon')}; the stack's accept floor (koa + koa-body + MIME threads, no database) ${list('floor')}; Pigeon/floor ${ratios}`,
    command: `npm run bench compare -- --only=api --rounds=${o.rounds} --seconds=${o.seconds} --warmup=${o.warmup}`,
  };
}
