/**
 * kill -9 mid-burst: the appliance (MTA running) takes API sends from the load
 * generator for `--seconds`, is killed with SIGKILL halfway through, and is
 * started again on the same database file. Every message answered 202 must
 * arrive at the sink (our own, which records each recipient); arrivals beyond
 * one per recipient are duplicates, which at-least-once delivery allows up to
 * the number of messages on the wire at the kill.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FROM, runLoad, startLatencySink, startPigeon, type LatencySink } from './compare-pigeon';
import { sleep } from './compare-tools';
import type { CompareOptions, Row } from './compare';

/** Recipients that arrived, until every expected one did or nothing came for 10 s. */
async function arrivals(sink: LatencySink, expected: Set<string>): Promise<string[]> {
  const all: string[] = [];
  const missing = new Set(expected);
  let lastMove = performance.now();
  while (missing.size && performance.now() - lastMove < 10_000) {
    await sleep(250);
    const { recipients } = await sink.report();
    if (!recipients.length) continue;
    all.push(...recipients);
    for (const r of recipients) missing.delete(r);
    lastMove = performance.now();
  }
  return all;
}

export async function crash(o: CompareOptions): Promise<Row> {
  const sink = await startLatencySink();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-bench-crash-'));
  try {
    const first = await startPigeon({ sinkPort: sink.port, dataDir });
    const load = runLoad({ kind: 'api', url: first.server.url, key: first.sendKey, from: FROM, size: o.size, concurrency: o.connections, rate: 0, count: 0, seconds: o.seconds });
    await sleep((o.seconds * 1000) / 2);
    await first.kill();
    const result = await load;
    const restarted = await startPigeon({ sinkPort: sink.port, dataDir, sendKey: first.sendKey });
    const accepted = new Set(result.acceptedIndexes.map((i) => `rcpt${i}@sink.test`));
    const got = await arrivals(sink, accepted);
    await restarted.close();
    const unique = new Set(got);
    const lost = [...accepted].filter((r) => !unique.has(r)).length;
    const line = `${accepted.size} accepted (202), ${result.errors} refused or cut off by the kill; after restart ${lost} accepted never arrived, ${got.length - unique.size} duplicates`;
    console.log(`  ${line}`);
    return { target: 'kill -9 mid-burst (0 lost, duplicates ≤ in flight)', postfix: 'n/a', pigeon: line, command: `npm run bench compare -- --only=crash --seconds=${o.seconds}` };
  } finally {
    sink.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
