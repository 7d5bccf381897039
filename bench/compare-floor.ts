/**
 * `npm run bench compare -- --only=floor`: Postfix, Pigeon and the stack's
 * floor (floor-server.ts: node:http + nodemailer + Pigeon's DKIM signer, no
 * database) alternately on one smtp-sink, each fed the same way as in `e2e`.
 * It answers two questions with figures from one run: how close Pigeon is to
 * what its stack can do at all on this machine, and whether that stack can
 * reach Postfix here. Each line also gives the machine's CPU time per
 * delivered message (busy share × cores × seconds ÷ messages, load tools
 * included), which compares work done rather than speed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { forkBenchServer } from './child';
import { FROM, startPigeon } from './compare-pigeon';
import { cpuMeter, smtpSource, startCountingSink, startPostfix, wrk, writeSendScript, type CountingSink } from './compare-tools';
import { median } from './compare-throughput';
import { warmUpViaSmtp, warmUpViaWrk, type MeasuredTarget } from './compare-warmup';
import type { CompareOptions, Row } from './compare';

const r0 = (x: number) => Math.round(x).toString();

interface Measured {
  msgPerSecond: number;
  cpuMsPerMessage: number;
}

/** Machine CPU milliseconds per message over a run: busy share of all cores × wall time ÷ messages. */
const cpuPerMessage = (busyPercent: number, seconds: number, messages: number) => (busyPercent / 100) * os.cpus().length * seconds * 1000 / Math.max(1, messages);

async function viaWrk(sink: CountingSink, o: CompareOptions, target: MeasuredTarget, label: string): Promise<Measured> {
  const script = writeSendScript(fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-bench-wrk-')), FROM, o.size);
  try {
    await warmUpViaWrk([target], script, o, sink);
    const own = (await target.stats()).cpuMs;
    const [base, cpu, t0] = [sink.count(), cpuMeter(), performance.now()];
    const w = await wrk(target.url, script, o.connections, o.seconds, { KEY: target.key });
    const accepted = w.requests - w.non2xx;
    const got = (await sink.waitFor(base + accepted, 30_000)) - base;
    const seconds = (performance.now() - t0) / 1000;
    const busy = cpu();
    const processMs = ((await target.stats()).cpuMs - own) / Math.max(1, got);
    const m = { msgPerSecond: got / seconds, cpuMsPerMessage: cpuPerMessage(busy, seconds, got) };
    console.log(`    ${label}: ${got} of ${accepted} delivered in ${seconds.toFixed(1)} s = ${r0(m.msgPerSecond)} msg/s, cpu busy ${r0(busy)} %, ${m.cpuMsPerMessage.toFixed(2)} CPU ms/message (its own process: ${processMs.toFixed(2)})`);
    return m;
  } finally {
    fs.rmSync(path.dirname(script), { recursive: true, force: true });
  }
}

async function postfix(sink: CountingSink, o: CompareOptions): Promise<Measured> {
  const pf = await startPostfix(sink.port);
  try {
    await warmUpViaSmtp(pf.port, o, sink);
    const [base, cpu, t0] = [sink.count(), cpuMeter(), performance.now()];
    await smtpSource(pf.port, o.connections, o.postfixMessages, o.size);
    const got = (await sink.waitFor(base + o.postfixMessages, 30_000)) - base;
    const seconds = (performance.now() - t0) / 1000;
    const busy = cpu();
    const m = { msgPerSecond: got / seconds, cpuMsPerMessage: cpuPerMessage(busy, seconds, got) };
    console.log(`    Postfix (smtp-source in, no DKIM): ${got} delivered in ${seconds.toFixed(1)} s = ${r0(m.msgPerSecond)} msg/s, cpu busy ${r0(busy)} %, ${m.cpuMsPerMessage.toFixed(2)} CPU ms/message`);
    return m;
  } finally {
    pf.stop();
  }
}

async function floor(sink: CountingSink, o: CompareOptions, sign: boolean): Promise<Measured> {
  const server = await forkBenchServer<{ url: string }>('floor-server.js', [JSON.stringify({ sinkPort: sink.port, connections: o.connections, sign })], 'inherit');
  try {
    return await viaWrk(sink, o, { url: server.ready.url, key: 'none', stats: server.stats }, `floor (no database${sign ? ', DKIM RSA-2048' : ', no DKIM'})`);
  } finally {
    await server.stop();
  }
}

async function pigeon(sink: CountingSink, o: CompareOptions): Promise<Measured> {
  const p = await startPigeon({ sinkPort: sink.port });
  try {
    return await viaWrk(sink, o, { url: p.server.url, key: p.sendKey, stats: p.server.stats }, 'Pigeon (API in, DKIM RSA-2048, synchronous=FULL)');
  } finally {
    await p.close();
  }
}

export async function stackFloor(o: CompareOptions): Promise<Row> {
  const sink = await startCountingSink();
  const runs: Record<'postfix' | 'floorSigned' | 'floorPlain' | 'pigeon', Measured[]> = { postfix: [], floorSigned: [], floorPlain: [], pigeon: [] };
  try {
    for (let round = 1; round <= o.rounds; round++) {
      console.log(`  round ${round}`);
      runs.postfix.push(await postfix(sink, o));
      runs.floorSigned.push(await floor(sink, o, true));
      runs.floorPlain.push(await floor(sink, o, false));
      runs.pigeon.push(await pigeon(sink, o));
    }
  } finally {
    await sink.stop();
  }
  const med = (k: keyof typeof runs) => ({ rate: median(runs[k].map((m) => m.msgPerSecond)), cpu: median(runs[k].map((m) => m.cpuMsPerMessage)) });
  const [pf, fs1, fs0, pg] = [med('postfix'), med('floorSigned'), med('floorPlain'), med('pigeon')];
  const text = (m: { rate: number; cpu: number }) => `${r0(m.rate)} msg/s, ${m.cpu.toFixed(2)} CPU ms/msg`;
  console.log(`  medians: Postfix ${text(pf)}; floor with DKIM ${text(fs1)}; floor without DKIM ${text(fs0)}; Pigeon ${text(pg)}`);
  return {
    target: 'the stack\'s floor: node:http + nodemailer + DKIM, no database (Pigeon ≤ floor)',
    postfix: text(pf),
    pigeon: `Pigeon ${text(pg)} = ${((100 * pg.rate) / fs1.rate).toFixed(0)} % of the floor with DKIM (${text(fs1)}); floor without DKIM ${text(fs0)}`,
    command: `npm run bench compare -- --only=floor --rounds=${o.rounds} --seconds=${o.seconds} --warmup=${o.warmup} --messages=${o.postfixMessages}`,
  };
}
