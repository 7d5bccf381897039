/**
 * What MTA-STS asks of one delivery and what TLS looked like on it, in the
 * terms the attempt row and the TLS report use. The delivery pipeline calls
 * `routeFor` after MX resolution (which hosts may be dialled, whether the
 * connection must verify) and `judge` once a session ran (the facts recorded
 * on the attempt, with an RFC 8460 result type when TLS fell short).
 */
import { mxMatches, type StsMode, type StsPolicy } from './policy';
import type { TlsPlan } from './resolver';

/** TLS facts of one attempt (message_attempts columns tls_*). */
export interface TlsFacts {
  /** e.g. TLSv1.3; null when the session stayed plain or never started */
  tlsVersion?: string | null;
  /** the certificate is valid for the MX name (system roots plus delivery.tlsCaFile) */
  tlsVerified?: boolean | null;
  /** the MTA-STS mode applied; null: the domain has no policy */
  tlsPolicy?: StsMode | null;
  /** RFC 8460 result-type when TLS fell short of the policy (or was not offered) */
  tlsFailure?: string | null;
  /** the domain whose TLS report counts this session (it publishes _smtp._tls), else null */
  tlsReportDomain?: string | null;
}

/** What the transport must meet for one destination. */
export interface TransportSecurity {
  /** enforce: verified TLS to policy hosts only; testing: opportunistic, shortfalls recorded */
  policy: StsPolicy | null;
  reportDomain: string | null;
}

export const NO_POLICY: TransportSecurity = { policy: null, reportDomain: null };

export type TlsRoute<H extends { name: string }> =
  | { kind: 'hosts'; hosts: H[]; security: TransportSecurity }
  | { kind: 'defer'; diagnostic: string; facts: TlsFacts };

/** Enforce keeps only MX hosts the policy names; none left defers (never a host outside the policy). */
export function routeFor<H extends { name: string }>(plan: TlsPlan, hosts: H[]): TlsRoute<H> {
  const policy = plan.policy && plan.policy.mode !== 'none' ? plan.policy : null;
  const security: TransportSecurity = { policy, reportDomain: plan.reporting ? plan.domain : null };
  if (policy?.mode !== 'enforce') return { kind: 'hosts', hosts, security };
  const allowed = hosts.filter((h) => mxMatches(policy.mx, h.name));
  if (allowed.length) return { kind: 'hosts', hosts: allowed, security };
  const names = hosts.map((h) => h.name).join(', ');
  return {
    kind: 'defer',
    diagnostic: `MTA-STS (enforce): no MX host of ${plan.domain} (${names}) matches the policy's mx ${policy.mx.join(', ')}; not sent`,
    facts: { tlsPolicy: 'enforce', tlsFailure: 'validation-failure', tlsReportDomain: security.reportDomain, tlsVersion: null, tlsVerified: null },
  };
}

/** A finished (or refused) session as the attempt records it. */
export function judge(security: TransportSecurity, host: string, session: { version: string | null; verified: boolean; authorizationError: string | null }): TlsFacts {
  const { policy } = security;
  const base = { tlsVersion: session.version, tlsVerified: session.version ? session.verified : null, tlsPolicy: policy?.mode ?? null, tlsReportDomain: security.reportDomain };
  let failure: string | null = null;
  if (!session.version) failure = 'starttls-not-supported';
  else if (policy && !mxMatches(policy.mx, host)) failure = 'validation-failure';
  else if (policy && !session.verified) failure = resultType(session.authorizationError ?? '');
  return { ...base, tlsFailure: failure };
}

/** A verified connection that could not be made (enforce): the RFC 8460 result type of the error. */
export function failedSession(security: TransportSecurity, error: { message: string; response?: string }): TlsFacts {
  const starttls = /STARTTLS/i.test(error.message) || Boolean(error.response);
  return {
    tlsVersion: null, tlsVerified: false, tlsPolicy: security.policy?.mode ?? null, tlsReportDomain: security.reportDomain,
    tlsFailure: starttls ? 'starttls-not-supported' : resultType(error.message),
  };
}

/** Node's certificate errors (code or message) in RFC 8460 §4.3.2 terms. */
export function resultType(error: string): string {
  if (/ALTNAME|does not match certificate|host.?mismatch/i.test(error)) return 'certificate-host-mismatch';
  if (/EXPIRED|NOT_YET_VALID|expired|not yet valid/i.test(error)) return 'certificate-expired';
  if (/SELF_SIGNED|ISSUER|UNABLE_TO_VERIFY|self.signed|issuer|unable to verify|untrusted/i.test(error)) return 'certificate-not-trusted';
  return 'validation-failure';
}
