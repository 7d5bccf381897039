/**
 * The material of the daily TLS reports (RFC 8460): each attempt toward a
 * domain that publishes `_smtp._tls` adds one session to `tls_report_counts`
 * for its UTC day, under "success" or its failure's result type. The record
 * step calls this inside the writer's transaction; addToCounters keeps the
 * additions and sums them per row at the commit, so a burst costs one
 * statement.
 */
import type { Queryable } from '../db';
import { addToCounters } from '../db/buffer';
import type { TlsFacts } from './session';

const KEY = ['day', 'policy_domain', 'policy_type', 'result', 'sending_ip', 'receiving_mx'];

export const utcDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** One attempt's session, when its domain asks for reports and a TLS outcome exists (a refused connection has none). */
export async function countTlsSession(db: Queryable, a: TlsFacts & { tls: boolean; sourceIp: string | null; mx: string | null }, now: number): Promise<void> {
  if (!a.tlsReportDomain) return;
  if (!a.tls && !a.tlsFailure) return; // never reached a TLS decision (connection refused, DNS): not a session
  await addToCounters(db, 'tls_report_counts', KEY, [{
    day: utcDay(now),
    policy_domain: a.tlsReportDomain,
    policy_type: a.tlsPolicy && a.tlsPolicy !== 'none' ? 'sts' : 'no-policy-found',
    result: a.tlsFailure ?? 'success',
    sending_ip: a.sourceIp ?? '',
    receiving_mx: a.mx ?? '',
    sessions: 1,
  }], ['sessions']);
}
