/**
 * The daily TLS report worker (RFC 8460). Once an hour (and at start) it
 * looks for counted days before today (UTC); for each day and policy domain
 * it looks up `_smtp._tls.<domain>` again, builds the report, gzips it and
 * sends it to every rua, then deletes that day's counts for the domain, so a
 * report goes out once. A domain that no longer publishes a record gets none.
 * Delivery is best effort, as the RFC allows: a failure is logged.
 */
import { gzipSync } from 'node:zlib';
import type { AppDeps } from '../deps';
import type { Worker } from '../modules';
import { createResolver, DnsError } from '../dns/resolver';
import { parseTlsRptRecord } from './policy';
import { buildReport, reportFilename, type CountRow, type ReportSubmitter } from './report';
import { reportingAddress, sendReport, type SendResult } from './send';
import { storedPolicy } from './store';
import { utcDay } from './counts';

const HOUR_MS = 3_600_000;

/** A day whose report could not be made for this long (the domain's DNS failing) is dropped, not retried. */
const GIVE_UP_AFTER_DAYS = 3;

export class TlsReportWorker implements Worker {
  readonly name = 'tls-reports';
  private timer?: NodeJS.Timeout;
  private running: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(private readonly deps: AppDeps) {}

  start(): void {
    const { tlsReports, mtaSts } = this.deps.config.delivery;
    if (!tlsReports.enabled && !mtaSts.enabled) return;
    const tick = () => {
      if (this.stopped) return;
      this.runOnce().catch((err) => this.deps.log.error({ err }, 'TLS reporting failed; the next run tries again'));
      this.timer = setTimeout(tick, HOUR_MS);
      this.timer.unref();
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /**
   * Sends the reports of every finished day. Runs one at a time: a run asked for while another is going (the
   * hourly one, the one at start) waits for it, so two runs never read the same counts and report them twice.
   */
  runOnce(): Promise<void> {
    const run = this.running.then(() => this.run());
    this.running = run.catch(() => undefined);
    return run;
  }

  private async run(): Promise<void> {
    // Policies past their max_age are never applied again: the table keeps only what may still be in force.
    await this.deps.writer.run((trx) => trx('mta_sts_policies').where('expires_at', '<', this.deps.clock.now()).delete());
    if (this.deps.config.delivery.tlsReports.enabled) await this.sendDue();
  }

  async sendDue(): Promise<SendResult[]> {
    const today = utcDay(this.deps.clock.now());
    await this.deps.writer.flushCounters(); // this node's summed session counts first (writer.ts counterFlushMs)
    const due: Array<{ day: string; policy_domain: string }> = await this.deps.reader('tls_report_counts')
      .where('day', '<', today).distinct('day', 'policy_domain').orderBy(['day', 'policy_domain']);
    const results: SendResult[] = [];
    for (const { day, policy_domain: domain } of due) {
      if (this.stopped) break;
      try {
        results.push(...(await this.report(day, domain)));
      } catch (err) {
        // One domain's trouble (its DNS down) must not hold up the others: its counts wait for the next run,
        // unless the day is too old to be worth reporting any more.
        const stale = day < utcDay(this.deps.clock.now() - GIVE_UP_AFTER_DAYS * 86_400_000);
        this.deps.log.warn({ err, domain, day, dropped: stale }, 'TLS report could not be made');
        if (!stale) continue;
      }
      await this.deps.writer.run((trx) => trx('tls_report_counts').where({ day, policy_domain: domain }).delete());
    }
    return results;
  }

  private async report(day: string, domain: string): Promise<SendResult[]> {
    const { config, clock, log } = this.deps;
    const rua = await this.ruaOf(domain);
    if (!rua) return [];
    const rows: CountRow[] = await this.deps.reader('tls_report_counts').where({ day, policy_domain: domain });
    const submitter: ReportSubmitter = {
      organization: config.delivery.tlsReports.organization || config.hostname,
      contact: config.delivery.tlsReports.contact || reportingAddress(config),
      hostname: config.hostname,
    };
    const report = buildReport(day, domain, rows, await storedPolicy(this.deps.reader, domain), submitter);
    const mail = {
      domain, reportId: report.reportId, submitter: config.hostname,
      filename: reportFilename(report, domain, submitter), gzipped: gzipSync(JSON.stringify(report.json)),
    };
    const results = await Promise.all(rua.map((uri) => sendReport(config, clock, uri, mail).catch((err: Error) => ({ rua: uri, ok: false, detail: err.message }))));
    for (const r of results) log[r.ok ? 'info' : 'warn']({ domain, day, rua: r.rua, detail: r.detail }, r.ok ? 'TLS report sent' : 'TLS report not delivered');
    return results;
  }

  private async ruaOf(domain: string): Promise<string[] | null> {
    try {
      return parseTlsRptRecord(await createResolver(this.deps.config).txt(`_smtp._tls.${domain}`));
    } catch (err) {
      if (err instanceof DnsError && err.kind !== 'temporary') return null;
      throw err; // DNS down: the counts stay for the next run
    }
  }
}
