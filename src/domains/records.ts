/**
 * The DNS records a sending domain publishes, as Pigeon asks for them:
 *  - dkim: TXT <selector>._domainkey.<domain>  "v=DKIM1; k=rsa; p=<public key>" (one per key: the
 *    primary key, an optional Ed25519 second key with k=ed25519, and the pending key of a rotation)
 *  - spf: TXT <domain>  "v=spf1 ip4:<each sending IP> ~all", or "v=spf1 include:<domains.spfInclude> ~all"
 *  - dmarc: TXT _dmarc.<domain>  "v=DMARC1; p=none; rua=mailto:dmarc@<domain>" (any valid DMARC record passes)
 *  - return_path: CNAME <domains.returnPathLabel>.<domain> → the bounce host (optional; aligns SPF)
 * and how they print as zone-file lines.
 */
import net from 'node:net';
import type { Config } from '../config';
import type { DomainKey, KeyRole, KeyStatus, RecordState, StoredCheck } from './repository';

export type Purpose = 'dkim' | 'spf' | 'dmarc' | 'return_path';

export interface ExpectedRecord {
  /** Key of its stored check: 'spf', 'dmarc', 'return_path' or 'dkim:<selector>'. */
  key: string;
  purpose: Purpose;
  type: 'TXT' | 'CNAME';
  host: string;
  value: string;
  /** Needed for the domain to be verified (active DKIM keys and SPF). */
  required: boolean;
  dkim?: { selector: string; algorithm: DomainKey['algorithm']; publicKey: string; status: KeyStatus; role: KeyRole };
}

export interface DnsRecordView {
  purpose: Purpose;
  type: 'TXT' | 'CNAME';
  host: string;
  value: string;
  required: boolean;
  state: RecordState;
  found: string[] | null;
  detail: string | null;
  checked_at: string | null;
  selector?: string;
  key_status?: KeyStatus;
  key_role?: KeyRole;
}

export const dkimHost = (selector: string, domain: string) => `${selector}._domainkey.${domain}`;
export const dmarcHost = (domain: string) => `_dmarc.${domain}`;
export const returnPathHost = (config: Config, domain: string) => `${config.domains.returnPathLabel}.${domain}`;
/** Where bounces are received: the return-path CNAME points here. */
export const bounceHost = (config: Config) => (config.delivery.bounceDomain || config.hostname).toLowerCase();

export function spfValue(config: Config): string {
  if (config.domains.spfInclude) return `v=spf1 include:${config.domains.spfInclude} ~all`;
  const mechanisms = config.ips.map((ip) => `${net.isIPv6(ip.address) ? 'ip6' : 'ip4'}:${ip.address}`);
  return ['v=spf1', ...new Set(mechanisms), '~all'].join(' ');
}

export const dkimValue = (algorithm: DomainKey['algorithm'], publicKey: string) => `v=DKIM1; k=${algorithm}; p=${publicKey}`;

/** DKIM keys (primary then second, active before pending; see keysOf), then SPF, DMARC and the return path. */
export function expectedRecords(config: Config, domain: string, keys: DomainKey[]): ExpectedRecord[] {
  const dkim: ExpectedRecord[] = keys.map((k) => ({
    key: `dkim:${k.selector}`,
    purpose: 'dkim',
    type: 'TXT',
    host: dkimHost(k.selector, domain),
    value: dkimValue(k.algorithm, k.publicKey),
    required: k.status === 'active',
    dkim: { selector: k.selector, algorithm: k.algorithm, publicKey: k.publicKey, status: k.status, role: k.role },
  }));
  return [
    ...dkim,
    { key: 'spf', purpose: 'spf', type: 'TXT', host: domain, value: spfValue(config), required: true },
    { key: 'dmarc', purpose: 'dmarc', type: 'TXT', host: dmarcHost(domain), value: `v=DMARC1; p=none; rua=mailto:dmarc@${domain}`, required: false },
    { key: 'return_path', purpose: 'return_path', type: 'CNAME', host: returnPathHost(config, domain), value: bounceHost(config), required: false },
  ];
}

/** Expected records joined with their last check; never checked → state pending. */
export function recordViews(expected: ExpectedRecord[], checks: StoredCheck[]): DnsRecordView[] {
  const byKey = new Map(checks.map((c) => [c.record, c]));
  return expected.map((r) => {
    const c = byKey.get(r.key);
    return {
      purpose: r.purpose,
      type: r.type,
      host: r.host,
      value: r.value,
      required: r.required,
      state: c?.state ?? 'pending',
      found: c && c.state !== 'verified' ? c.found : null,
      detail: c?.detail ?? null,
      checked_at: c ? new Date(c.checkedAt).toISOString() : null,
      ...(r.dkim ? { selector: r.dkim.selector, key_status: r.dkim.status, key_role: r.dkim.role } : {}),
    };
  });
}

const quote = (s: string) => `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;

/** A TXT value as character-strings of at most 255 bytes (a 2048-bit DKIM key needs two). */
export function txtStrings(value: string): string[] {
  return value.match(/[\s\S]{1,255}/g) ?? [''];
}

/** `host. 3600 IN TXT "…" "…"` — pasteable into a BIND-style zone file. */
export function zoneLine(r: { type: string; host: string; value: string }, ttl = 3600): string {
  const data = r.type === 'TXT' ? txtStrings(r.value).map(quote).join(' ') : `${r.value}.`;
  return `${r.host}. ${ttl} IN ${r.type} ${data}`;
}
