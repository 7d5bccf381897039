/**
 * The throughput rows of `npm run bench compare`: end to end against Postfix
 * (alternating runs on one smtp-sink), end to end with a webhook subscribed to
 * every event, SMTP submission accept, and latency at a fixed offered rate
 * (API accept has its own file, compare-api.ts). Load comes from C tools (wrk,
 * smtp-source) or from compare-load.ts in its own process; the appliance runs
 * in its own.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { percentile } from './delivery-harness';
import { FROM, runLoad, startLatencySink, startPigeon, subscribeWebhook } from './compare-pigeon';
import { cpuMeter, sleep, smtpSource, startCountingSink, startPostfix, wrk, writeSendScript, type CountingSink } from './compare-tools';
import { warmUpViaSmtp, warmUpViaWrk } from './compare-warmup';
import type { CompareOptions, Row } from './compare';

export const median = (xs: number[]): number => percentile([...xs].sort((a, b) => a - b), 0.5);
const r0 = (x: number) => Math.round(x).toString();
const ms = (x: number) => `${x.toFixed(1)} ms`;

interface Run {
  msgPerSecond: number;
  line: string;
}

async function postfixRun(sink: CountingSink, o: CompareOptions): Promise<Run> {
  const postfix = await startPostfix(sink.port);
  try {
    await warmUpViaSmtp(postfix.port, o, sink);
    const [base, cpu, t0] = [sink.count(), cpuMeter(), performance.now()];
    const acceptSeconds = await smtpSource(postfix.port, o.connections, o.postfixMessages, o.size);
    const got = (await sink.waitFor(base + o.postfixMessages, 30_000)) - base;
    const seconds = (performance.now() - t0) / 1000;
    const line = `Postfix: ${o.postfixMessages} sent (smtp-source, ${o.connections} sessions), accept ${r0(o.postfixMessages / acceptSeconds)} msg/s, delivered ${got} in ${seconds.toFixed(1)} s = ${r0(got / seconds)} msg/s, cpu busy ${r0(cpu())} %`;
    return { msgPerSecond: got / seconds, line };
  } finally {
    postfix.stop();
  }
}

/** What pigeonRun asks of a webhook receiver: its URL, and hooks around the measured window. */
interface WebhookHooks {
  url: string;
  /** after the warm-up: waits for its webhook deliveries to end, so the measured window starts with none due */
  warmedUp(): Promise<void>;
  /** after the last mail arrived, before the appliance stops: waits for the dispatcher to finish */
  settle(): Promise<void>;
}

/**
 * After a warm-up (compare-warmup.ts), wrk drives the API for o.seconds; delivery is timed from the first
 * request to the last arrival at the sink.
 */
async function pigeonRun(sink: CountingSink, o: CompareOptions, webhook?: WebhookHooks): Promise<Run & { delivered: number; cpuMsPerMessage: number }> {
  const pigeon = await startPigeon({ sinkPort: sink.port });
  try {
    if (webhook) await subscribeWebhook(pigeon, webhook.url);
    const script = writeSendScript(fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-bench-wrk-')), FROM, o.size);
    await warmUpViaWrk([{ url: pigeon.server.url, key: pigeon.sendKey }], script, o, sink);
    await webhook?.warmedUp();
    const first = await pigeon.server.stats();
    const [own, base, cpu, t0] = [first.cpuMs, sink.count(), cpuMeter(), performance.now()];
    const w = await wrk(pigeon.server.url, script, o.connections, o.seconds, { KEY: pigeon.sendKey });
    const accepted = w.requests - w.non2xx;
    const got = (await sink.waitFor(base + accepted, 30_000)) - base;
    const seconds = (performance.now() - t0) / 1000;
    const busy = cpu();
    const atEnd = await pigeon.server.stats();
    fs.rmSync(path.dirname(script), { recursive: true, force: true });
    await webhook?.settle();
    // The appliance's own CPU time per delivered message (its webhook deliveries included): unlike msg/s, it holds
    // on a shared, loaded machine.
    const last = await pigeon.server.stats();
    const cpuMsPerMessage = (last.cpuMs - own) / Math.max(1, got);
    // how much of the run the one writer spent in transactions: near 100 %, it and not the CPU is the limit
    const writerBusy = (100 * ((atEnd.writerBusyMs ?? 0) - (first.writerBusyMs ?? 0))) / (seconds * 1000);
    // and the main thread (HTTP, MIME, the SMTP client, the driver's callbacks; DKIM runs on helper threads)
    const mainBusy = (100 * ((atEnd.mainThreadBusyMs ?? 0) - (first.mainThreadBusyMs ?? 0))) / (seconds * 1000);
    const line = `Pigeon:  ${accepted} accepted (wrk, ${o.connections} connections, ${o.seconds} s after ${o.warmup} s of warm-up; ${w.non2xx} refused), accept ${r0(accepted / w.seconds)} req/s p50 ${ms(w.p50Ms)} p99 ${ms(w.p99Ms)}, delivered ${got} in ${seconds.toFixed(1)} s = ${r0(got / seconds)} msg/s, cpu busy ${r0(busy)} %, its own process ${cpuMsPerMessage.toFixed(2)} CPU ms/message, writer busy ${r0(writerBusy)} %, main thread busy ${r0(mainBusy)} %`;
    return { msgPerSecond: got / seconds, line, delivered: got, cpuMsPerMessage };
  } finally {
    await pigeon.close();
  }
}

export async function endToEnd(o: CompareOptions): Promise<Row> {
  const sink = await startCountingSink();
  const [postfix, pigeon]: [number[], number[]] = [[], []];
  try {
    for (let round = 1; round <= o.rounds; round++) {
      const pf = await postfixRun(sink, o);
      console.log(`  round ${round} ${pf.line}`);
      postfix.push(pf.msgPerSecond);
      const pg = await pigeonRun(sink, o);
      console.log(`  round ${round} ${pg.line}`);
      pigeon.push(pg.msgPerSecond);
    }
  } finally {
    await sink.stop();
  }
  const [a, b] = [median(postfix), median(pigeon)];
  console.log(`  medians: Postfix ${r0(a)} msg/s, Pigeon ${r0(b)} msg/s, Pigeon/Postfix ${(b / a).toFixed(2)}`);
  return {
    target: 'end to end msg/s (≥ 800 and ≥ Postfix)',
    postfix: `${r0(a)} (median of ${o.rounds})`,
    pigeon: `${r0(b)} (median of ${o.rounds}; ratio ${(b / a).toFixed(2)})`,
    command: `npm run bench compare -- --only=e2e --rounds=${o.rounds} --seconds=${o.seconds} --warmup=${o.warmup} --messages=${o.postfixMessages}`,
  };
}

/** A loopback webhook receiver that answers 200 at once and counts. */
function startReceiver(): Promise<{ url: string; count(): number; close(): void }> {
  let received = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => (received++, res.end('ok')));
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`;
      resolve({ url, count: () => received, close: () => server.close() });
    });
  });
}

export async function withWebhook(o: CompareOptions): Promise<Row> {
  const [sink, receiver] = [await startCountingSink(), await startReceiver()];
  try {
    let [t0, hookBase, atMailDone, last, lastMove] = [0, 0, 0, 0, 0];
    // until the receiver has every delivery of the messages at the sink (3 each: queued, sent, delivered), or none came for 10 s
    const drain = async () => {
      [last, lastMove] = [receiver.count(), performance.now()];
      while (performance.now() - lastMove < 10_000 && last < 3 * sink.count()) {
        await sleep(100);
        if (receiver.count() !== last) [last, lastMove] = [receiver.count(), performance.now()];
      }
    };
    const warmedUp = async () => {
      await drain();
      [t0, hookBase] = [performance.now(), receiver.count()];
    };
    const settle = async () => {
      atMailDone = receiver.count() - hookBase;
      await drain();
    };
    const run = await pigeonRun(sink, o, { url: receiver.url, warmedUp, settle });
    const [hooks, hookSeconds] = [last - hookBase, (lastMove - t0) / 1000];
    console.log(`  ${run.line}`);
    console.log(`  webhook: ${hooks} deliveries (${(hooks / Math.max(1, run.delivered)).toFixed(2)} per delivered message) in ${hookSeconds.toFixed(1)} s = ${r0(hooks / hookSeconds)} deliveries/s; ${r0((100 * atMailDone) / Math.max(1, hooks))} % of them done when the last mail arrived`);
    return {
      target: 'end to end, 1 webhook on every event (≥ 500 msg/s)',
      postfix: 'n/a',
      pigeon: `${r0(run.msgPerSecond)} msg/s, ${r0(hooks / hookSeconds)} webhook deliveries/s, ${run.cpuMsPerMessage.toFixed(2)} CPU ms/message`,
      command: `npm run bench compare -- --only=webhook --seconds=${o.seconds} --warmup=${o.warmup}`,
    };
  } finally {
    await sink.stop();
    receiver.close();
  }
}

/**
 * Both MTAs not delivering, each fed twice over `connections` connections: by a nodemailer pool in its own process
 * (closed loop for `seconds`; Pigeon with AUTH PLAIN), then by smtp-source, Postfix's C tool (`messages`; Pigeon
 * without AUTH, as a key's relay network 127.0.0.1/32 allows; the accept path after MAIL FROM is the same). The
 * nodemailer client tops out near 450 msg/s here even against an smtp-server that does nothing, so only the
 * smtp-source figures can show the target. Pigeon's figures include its own CPU ms per accepted message.
 */
export async function smtpAccept(o: CompareOptions): Promise<Row> {
  const sink = await startCountingSink();
  const base = { kind: 'smtp' as const, from: FROM, size: o.size, concurrency: o.connections, rate: 0, count: 0, seconds: o.seconds };
  const describe = (r: Awaited<ReturnType<typeof runLoad>>) => {
    const sorted = [...r.latenciesMs].sort((a, b) => a - b);
    return `${r0(r.accepted / r.seconds)} msg/s, p99 ${ms(percentile(sorted, 0.99))}${r.errors ? `, ${r.errors} errors (${r.firstError})` : ''}`;
  };
  const viaSource = async (port: number) => `${r0(o.postfixMessages / (await smtpSource(port, o.connections, o.postfixMessages, o.size, FROM)))} msg/s`;
  try {
    const postfix = await startPostfix(sink.port, true);
    await warmUpViaSmtp(postfix.port, o); // delivery deferred: its messages stay queued
    const pf = await (async () => `nodemailer ${describe(await runLoad({ ...base, port: postfix.port }))}; smtp-source ${await viaSource(postfix.port)}`)().finally(() => postfix.stop());
    console.log(`  Postfix (delivery deferred): ${pf}`);
    const pigeon = await startPigeon({ sinkPort: sink.port, paused: true, relayLoopback: true });
    await warmUpViaSmtp(pigeon.smtpPort, o, undefined, FROM);
    const cpuMs = async () => (await pigeon.server.stats()).cpuMs;
    // The appliance's own CPU time per accepted message: unlike msg/s, it holds on a shared, loaded machine.
    const perMessage = (before: number, after: number, messages: number) => `${((after - before) / Math.max(1, messages)).toFixed(2)} CPU ms/message`;
    const pg = await (async () => {
      const c0 = await cpuMs();
      const load = await runLoad({ ...base, port: pigeon.smtpPort, key: pigeon.sendKey });
      const c1 = await cpuMs();
      const source = await viaSource(pigeon.smtpPort);
      const c2 = await cpuMs();
      return `nodemailer (AUTH PLAIN) ${describe(load)}, ${perMessage(c0, c1, load.accepted)}; smtp-source (relay network) ${source}, ${perMessage(c1, c2, o.postfixMessages)}`;
    })().finally(() => pigeon.close());
    console.log(`  Pigeon (MTA paused): ${pg} (its own process)`);
    return {
      target: `SMTP submission accept, ${o.connections} conns (≥ 1000 msg/s)`, postfix: pf, pigeon: pg,
      command: `npm run bench compare -- --only=smtp --seconds=${o.seconds} --warmup=${o.warmup} --messages=${o.postfixMessages}`,
    };
  } finally {
    await sink.stop();
  }
}

/** Everything that arrived at the latency sink until `expected` did or nothing came for 5 s. */
async function collectArrivals(sink: Awaited<ReturnType<typeof startLatencySink>>, expected: number): Promise<number[]> {
  const all: number[] = [];
  let lastMove = performance.now();
  while (all.length < expected && performance.now() - lastMove < 5000) {
    await sleep(200);
    const { latenciesMs } = await sink.report();
    if (!latenciesMs.length) continue;
    all.push(...latenciesMs);
    lastMove = performance.now();
  }
  return all.sort((a, b) => a - b);
}

const WARM_UP_SECONDS = 3;

export async function latency(o: CompareOptions): Promise<Row> {
  const sink = await startLatencySink();
  const base = { from: FROM, size: o.size, rate: o.rate, count: o.latencyMessages, seconds: 0 };
  const describe = (accept: number[], arrival: number[]) =>
    `accept p50 ${ms(percentile(accept, 0.5))} p99 ${ms(percentile(accept, 0.99))}; arrival p50 ${ms(percentile(arrival, 0.5))} p99 ${ms(percentile(arrival, 0.99))} (${arrival.length} arrived)`;
  // Both servers first take WARM_UP_SECONDS of the same load, not counted: the figure is the steady state of a
  // running server, not Node's JIT compiling Pigeon's paths or Postfix starting its delivery agents.
  const warmUp = { ...base, count: Math.ceil(o.rate * WARM_UP_SECONDS) };
  try {
    const postfix = await startPostfix(sink.port);
    await collectArrivals(sink, (await runLoad({ ...warmUp, kind: 'smtp', port: postfix.port, concurrency: 10 })).accepted);
    const pfLoad = await runLoad({ ...base, kind: 'smtp', port: postfix.port, concurrency: 10 });
    const pfText = describe(pfLoad.latenciesMs.sort((a, b) => a - b), await collectArrivals(sink, pfLoad.accepted));
    postfix.stop();
    console.log(`  Postfix (SMTP in, 10 conns): ${pfText}; load generator start lag p99 ${ms(percentile(pfLoad.lagsMs.sort((a, b) => a - b), 0.99))}`);
    const pigeon = await startPigeon({ sinkPort: sink.port });
    await collectArrivals(sink, (await runLoad({ ...warmUp, kind: 'api', url: pigeon.server.url, key: pigeon.sendKey, concurrency: 50 })).accepted);
    const pgLoad = await runLoad({ ...base, kind: 'api', url: pigeon.server.url, key: pigeon.sendKey, concurrency: 50 });
    const pgText = describe(pgLoad.latenciesMs.sort((a, b) => a - b), await collectArrivals(sink, pgLoad.accepted));
    await pigeon.close();
    console.log(`  Pigeon (API in, 50 conns): ${pgText}; load generator start lag p99 ${ms(percentile(pgLoad.lagsMs.sort((a, b) => a - b), 0.99))}${pgLoad.errors ? `; ${pgLoad.errors} errors (${pgLoad.firstError})` : ''}`);
    return {
      target: `latency at ${o.rate} msg/s open loop (accept p99 ≤ 20 ms, arrival p99 ≤ 50 ms)`,
      postfix: pfText,
      pigeon: pgText,
      command: `npm run bench compare -- --only=latency --rate=${o.rate} --latency-messages=${o.latencyMessages}`,
    };
  } finally {
    sink.stop();
  }
}
