/**
 * The RFC 8460 §4 aggregate report of one UTC day toward one policy domain,
 * made from the `tls_report_counts` rows: one policy entry per policy type
 * seen that day (sts, or no-policy-found), its success and failure totals,
 * and failure details per result type, sending address and MX host.
 */
import crypto from 'node:crypto';
import type { StsPolicy } from './policy';

export interface CountRow {
  day: string;
  policy_domain: string;
  policy_type: string;
  result: string;
  sending_ip: string;
  receiving_mx: string;
  sessions: number;
}

export interface ReportSubmitter {
  organization: string;
  contact: string;
  /** host name of the sending MTA, in the report id and file name */
  hostname: string;
}

export interface TlsReport {
  json: Record<string, unknown>;
  reportId: string;
  /** seconds since the epoch, as the file name carries them */
  begin: number;
  end: number;
}

export function buildReport(day: string, domain: string, rows: CountRow[], policy: StsPolicy | null, submitter: ReportSubmitter): TlsReport {
  const begin = Date.parse(`${day}T00:00:00Z`);
  const end = begin + 86_400_000 - 1000;
  const reportId = `${day}T00:00:00Z_${domain}_${crypto.randomBytes(6).toString('hex')}@${submitter.hostname}`;
  const types = [...new Set(rows.map((r) => r.policy_type))].sort();
  const json = {
    'organization-name': submitter.organization,
    'date-range': { 'start-datetime': isoSeconds(begin), 'end-datetime': isoSeconds(end) },
    'contact-info': submitter.contact,
    'report-id': reportId,
    policies: types.map((type) => policyEntry(domain, type, rows.filter((r) => r.policy_type === type), policy)),
  };
  return { json, reportId, begin: begin / 1000, end: end / 1000 };
}

function policyEntry(domain: string, type: string, rows: CountRow[], policy: StsPolicy | null) {
  const successes = rows.filter((r) => r.result === 'success').reduce((n, r) => n + Number(r.sessions), 0);
  const failures = rows.filter((r) => r.result !== 'success');
  const sts = type === 'sts' && policy ? { 'policy-string': policy.text.split(/\r?\n/).filter(Boolean), 'mx-host': policy.mx } : {};
  return {
    policy: { 'policy-type': type, ...sts, 'policy-domain': domain },
    summary: {
      'total-successful-session-count': successes,
      'total-failure-session-count': failures.reduce((n, r) => n + Number(r.sessions), 0),
    },
    ...(failures.length ? {
      'failure-details': failures.map((r) => ({
        'result-type': r.result,
        ...(r.sending_ip ? { 'sending-mta-ip': r.sending_ip } : {}),
        ...(r.receiving_mx ? { 'receiving-mx-hostname': r.receiving_mx } : {}),
        'failed-session-count': Number(r.sessions),
      })),
    } : {}),
  };
}

const isoSeconds = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** RFC 8460 §5.3: sender "!" policy-domain "!" begin "!" end "!" unique-id ".json.gz". */
export function reportFilename(report: TlsReport, domain: string, submitter: ReportSubmitter): string {
  const unique = report.reportId.split('_')[2].split('@')[0];
  return `${submitter.hostname}!${domain}!${report.begin}!${report.end}!${unique}.json.gz`;
}
