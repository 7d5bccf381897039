/**
 * MTA-STS (RFC 8461) as data: the `_mta-sts` TXT record, the policy file
 * served at https://mta-sts.<domain>/.well-known/mta-sts.txt, and whether an
 * MX host name matches the policy's `mx` patterns. Parsers are strict where the
 * RFC says MUST and bounded by what they are given (the fetch caps the size).
 */

export type StsMode = 'enforce' | 'testing' | 'none';

export interface StsPolicy {
  /** id= of the TXT record the policy was fetched under */
  id: string;
  mode: StsMode;
  /** mx patterns, lower case: "mail.example.com" or "*.example.net" */
  mx: string[];
  /** seconds */
  maxAge: number;
  /** the policy as served (CRLF or LF lines), for the TLS report */
  text: string;
  fetchedAt: number;
  expiresAt: number;
}

/** RFC 8461 §3.2: max_age is at most 31557600 (about a year). */
export const MAX_AGE_LIMIT = 31_557_600;
const MAX_MX_PATTERNS = 100;

/** The id of a `v=STSv1; id=…` record, or null when the TXT set holds no (single, valid) STS record. */
export function parseStsRecord(txt: string[][]): string | null {
  const records = txt.map((parts) => parts.join('')).filter((r) => /^v=STSv1\s*(;|$)/.test(r));
  if (records.length !== 1) return null; // RFC 8461 §3.1: several records mean none
  const id = /(?:^|;)\s*id=([A-Za-z0-9]{1,32})\s*(?:;|$)/.exec(records[0]);
  return id ? id[1] : null;
}

/** True when the TXT set at `_smtp._tls.<domain>` is a TLSRPT record with at least one rua. */
export function parseTlsRptRecord(txt: string[][]): string[] | null {
  const records = txt.map((parts) => parts.join('')).filter((r) => /^v=TLSRPTv1\s*(;|$)/.test(r));
  if (records.length !== 1) return null; // RFC 8460 §3: several records mean none
  const rua = /(?:^|;)\s*rua=([^;]+)/.exec(records[0]);
  if (!rua) return null;
  const uris = rua[1].split(',').map((u) => u.trim()).filter((u) => /^(mailto|https):/i.test(u)).slice(0, 10);
  return uris.length ? uris : null;
}

/** The policy file's fields, or a reason it is invalid. */
export function parsePolicy(text: string): { mode: StsMode; mx: string[]; maxAge: number } | { invalid: string } {
  const fields = new Map<string, string[]>();
  for (const line of text.split(/\r?\n/)) {
    if (!line.trim()) continue;
    const at = line.indexOf(':');
    if (at < 1) return { invalid: `line without a key: ${line.slice(0, 60)}` };
    const key = line.slice(0, at).trim();
    const list = fields.get(key) ?? [];
    list.push(line.slice(at + 1).trim());
    fields.set(key, list);
  }
  if (fields.get('version')?.[0] !== 'STSv1') return { invalid: 'version is not STSv1' };
  const mode = fields.get('mode')?.[0];
  if (mode !== 'enforce' && mode !== 'testing' && mode !== 'none') return { invalid: `mode ${mode ?? '(missing)'} is not enforce, testing or none` };
  const maxAgeText = fields.get('max_age')?.[0] ?? '';
  if (!/^\d{1,10}$/.test(maxAgeText)) return { invalid: 'max_age is missing or not a number' };
  const mx = (fields.get('mx') ?? []).map((m) => m.toLowerCase().replace(/\.$/, '')).slice(0, MAX_MX_PATTERNS);
  if (mode !== 'none' && mx.length === 0) return { invalid: 'no mx patterns' };
  if (mx.some((m) => !/^(\*\.)?[a-z0-9-]+(\.[a-z0-9-]+)+$/.test(m))) return { invalid: 'an mx pattern is not a host name' };
  return { mode, mx, maxAge: Math.min(Number(maxAgeText), MAX_AGE_LIMIT) };
}

/** RFC 8461 §4.1: "*.example.com" matches exactly one label more; other patterns match the whole name. */
export function mxMatches(patterns: readonly string[], host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return patterns.some((p) => {
    if (!p.startsWith('*.')) return p === name;
    const dot = name.indexOf('.');
    return dot > 0 && name.slice(dot + 1) === p.slice(2);
  });
}
