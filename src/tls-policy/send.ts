/**
 * Hands one gzipped RFC 8460 report to each `rua` of the policy domain
 * (§5.3, §5.4): `https:` by POST with media type application/tlsrpt+gzip,
 * through the same guarded client as policy fetches (public addresses only
 * unless delivery.allowPrivateTargets), and `mailto:` as a multipart/report
 * email from the reporting address, straight to the rua domain's MX with
 * Pigeon's SMTP client (not the customer queue: the report is the
 * appliance's own mail and belongs to no account). Outcomes are data.
 */
import net from 'node:net';
import crypto from 'node:crypto';
import type { Clock } from '../clock';
import type { Config } from '../config';
import { createMxResolver } from '../delivery/mx';
import { SmtpClient } from '../delivery/smtp-client';
import { isPublicAddress } from '../net/address-class';
import { httpsRequest } from './https';
import { deliveryCas } from './store';

export const MEDIA_TYPE = 'application/tlsrpt+gzip';

export interface ReportMail {
  domain: string;
  reportId: string;
  filename: string;
  gzipped: Buffer;
  submitter: string;
}

export interface SendResult {
  rua: string;
  ok: boolean;
  detail: string;
}

export async function sendReport(config: Config, clock: Clock, rua: string, mail: ReportMail): Promise<SendResult> {
  const d = config.delivery;
  if (/^https:/i.test(rua)) {
    const res = await httpsRequest(config, {
      url: new URL(rua), method: 'POST', headers: { 'Content-Type': MEDIA_TYPE }, body: mail.gzipped,
      timeoutMs: d.tlsReports.timeoutMs, maxBytes: 64 * 1024, ca: deliveryCas(d.tlsCaFile),
    });
    const ok = res.ok && res.status >= 200 && res.status < 300;
    return { rua, ok, detail: res.ok ? `HTTP ${res.status}` : res.error };
  }
  const to = decodeURIComponent(rua.replace(/^mailto:/i, '').split('?')[0]);
  return { rua, ...(await mailReport(config, clock, to, mail)) };
}

async function mailReport(config: Config, clock: Clock, to: string, mail: ReportMail): Promise<{ ok: boolean; detail: string }> {
  const domain = to.split('@')[1]?.toLowerCase();
  if (!domain) return { ok: false, detail: `${to} is not an address` };
  const mx = createMxResolver(config, clock);
  const found = await mx.resolve(domain);
  if (found.kind !== 'hosts') return { ok: false, detail: found.diagnostic };
  const source = config.ips[0];
  const from = reportingAddress(config);
  const raw = composeReportMail(from, to, mail, clock.now());
  const d = config.delivery;
  let last = `no MX host of ${domain} could be reached`;
  for (const host of found.hosts) {
    const addresses = await mx.addresses(host.name, net.isIPv6(source.address) ? 6 : 4);
    const dialable = addresses.kind === 'addresses' ? addresses.addresses.filter((a) => d.allowPrivateTargets || isPublicAddress(a)) : [];
    for (const address of dialable) {
      const opened = await SmtpClient.open({
        host: host.name, address, port: d.port, localAddress: source.address, ehlo: source.hostname, tls: 'opportunistic', ca: deliveryCas(d.tlsCaFile),
        connectTimeoutMs: d.connectTimeoutMs, greetingTimeoutMs: d.greetingTimeoutMs, commandTimeoutMs: d.commandTimeoutMs, dataTimeoutMs: d.tlsReports.timeoutMs,
      });
      if ('error' in opened) {
        last = opened.error.message;
        continue;
      }
      const sent = await opened.client.send({ from, to, size: raw.length, use8BitMime: false }, raw);
      opened.client.close();
      if (sent.ok) return { ok: true, detail: sent.response };
      return { ok: false, detail: sent.error.response ?? sent.error.message };
    }
  }
  return { ok: false, detail: last };
}

export function reportingAddress(config: Config): string {
  return config.delivery.tlsReports.from || `tlsrpt-noreply@${config.hostname}`;
}

/** RFC 8460 §5.3: multipart/report; report-type="tlsrpt", the gzipped JSON as an attachment. */
export function composeReportMail(from: string, to: string, mail: ReportMail, now: number): Buffer {
  const boundary = `tlsrpt-${crypto.randomBytes(8).toString('hex')}`;
  const body = mail.gzipped.toString('base64').replace(/.{76}/g, '$&\r\n');
  const lines = [
    `From: ${from}`,
    `To: ${to}`,
    `Date: ${new Date(now).toUTCString().replace('GMT', '+0000')}`,
    `Subject: Report Domain: ${mail.domain} Submitter: ${mail.submitter} Report-ID: <${mail.reportId}>`,
    `Message-ID: <${crypto.randomUUID()}@${mail.submitter}>`,
    `TLS-Report-Domain: ${mail.domain}`,
    `TLS-Report-Submitter: ${mail.submitter}`,
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type="tlsrpt"; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset=utf-8',
    '',
    `This is an aggregate TLS report (RFC 8460) from ${mail.submitter} for ${mail.domain}.`,
    `--${boundary}`,
    `Content-Type: ${MEDIA_TYPE}`,
    'Content-Transfer-Encoding: base64',
    `Content-Disposition: attachment; filename="${mail.filename}"`,
    '',
    body.replace(/\r\n$/, ''),
    `--${boundary}--`,
    '',
  ];
  return Buffer.from(lines.join('\r\n'));
}
