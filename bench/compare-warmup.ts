/**
 * The warm-up every measured run of `npm run bench compare` starts with: the
 * server under test first takes `--warmup` seconds (default 15) of the same
 * load, not counted, and the measurement begins once that load has drained.
 *
 * Why: Pigeon is a long-running server on a JIT. In its first seconds V8's
 * optimising compiler runs on helper threads beside the load: measured on 2
 * cores at ~700 msg/s end to end, those threads took 35 % of a core over
 * seconds 2 to 6 of the load, then 19 %, 11 %, 8 % and 6 % in the five-second
 * windows after; an 8-second run of a fresh process measured mostly that
 * (the same build: 572–584 msg/s cold, 673–771 after 10 s of load). Postfix
 * gets a warm-up of its own (its daemons start on the first mail), so both
 * are measured as a server that has been running, which is what users get.
 * `--warmup=0` measures cold starts, as the runs before 2026-11-23 did.
 */
import { smtpSource, wrk, type CountingSink } from './compare-tools';
import type { ServerStats } from './child';
import type { CompareOptions } from './compare';

/** Messages smtp-source sends Postfix (or Pigeon's SMTP port) to warm it: enough to start every daemon and pool. */
const SMTP_WARM_UP_MESSAGES = 2000;

export interface WrkTarget {
  url: string;
  key: string;
}

/** A wrk target whose server also reports its own CPU time and busy shares (bench/child.ts). */
export interface MeasuredTarget extends WrkTarget {
  stats(): Promise<ServerStats>;
}

/**
 * wrk on every target at once for o.warmup seconds (connections shared out as in the run), then, when a sink
 * is given, waits until the accepted messages have arrived there (or nothing arrived for 10 s).
 */
export async function warmUpViaWrk(targets: WrkTarget[], script: string, o: CompareOptions, sink?: CountingSink): Promise<void> {
  if (!o.warmup) return;
  const base = sink?.count() ?? 0;
  const n = targets.length;
  const runs = await Promise.all(targets.map((t, i) => {
    const connections = Math.floor(o.connections / n) + (i < o.connections % n ? 1 : 0);
    return wrk(t.url, script, connections, o.warmup, { KEY: t.key });
  }));
  const accepted = runs.reduce((sum, w) => sum + w.requests - w.non2xx, 0);
  if (sink) await sink.waitFor(base + accepted, 10_000);
}

/** smtp-source into `port` (Postfix, or Pigeon's SMTP port), then, when a sink is given, waits for the arrivals. */
export async function warmUpViaSmtp(port: number, o: CompareOptions, sink?: CountingSink, from?: string): Promise<void> {
  if (!o.warmup) return;
  const base = sink?.count() ?? 0;
  await smtpSource(port, o.connections, SMTP_WARM_UP_MESSAGES, o.size, from);
  if (sink) await sink.waitFor(base + SMTP_WARM_UP_MESSAGES, 10_000);
}
