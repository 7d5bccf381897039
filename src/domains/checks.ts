/**
 * One DNS check per expected record, each returning a RecordCheck value:
 * verified, mismatch or missing (with what was found instead), or
 * temporary_error when DNS did not answer (timeout, SERVFAIL) — never a throw.
 * Lookups go through the appliance's resolver, so `dns.servers` applies.
 */
import type { Config } from '../config';
import { DnsError, type DnsResolver } from '../dns/resolver';
import type { RecordCheck } from './repository';
import { bounceHost, type ExpectedRecord } from './records';

// mailauth ships no type declarations; this is the part we use.
interface SpfResult {
  status: { result: 'pass' | 'fail' | 'softfail' | 'neutral' | 'none' | 'permerror' | 'temperror'; comment?: string };
}
const { spf } = require('mailauth/lib/spf') as {
  spf(opts: { sender: string; ip: string; helo: string; mta: string; resolver: DnsResolver['forMailauth'] }): Promise<SpfResult>;
};

type TxtAnswer = { kind: 'records'; records: string[] } | { kind: 'none' } | { kind: 'temporary'; code: string };

const temporary = (host: string, code: string): RecordCheck => ({
  state: 'temporary_error',
  found: null,
  detail: `DNS lookup of ${host} failed temporarily (${code}); try again later`,
});

const NOT_FOUND_CODES = new Set(['ENOTFOUND', 'ENODATA']);

/** TXT records with their character-strings joined, and stray quotes a DNS panel may have kept removed. */
async function lookupTxt(resolver: DnsResolver, host: string): Promise<TxtAnswer> {
  try {
    const answers = await resolver.txt(host);
    return { kind: 'records', records: answers.map((chunks) => chunks.join('').replace(/"/g, '').trim()) };
  } catch (err) {
    if (err instanceof DnsError && err.kind !== 'temporary') return { kind: 'none' };
    return { kind: 'temporary', code: err instanceof DnsError ? err.code : 'EUNKNOWN' };
  }
}

/** `a=1; b = 2;` → {a: '1', b: '2'}; tag names lower-case, values trimmed. */
export function parseTags(record: string): Map<string, string> {
  const tags = new Map<string, string>();
  for (const part of record.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim().toLowerCase();
    if (name && !tags.has(name)) tags.set(name, part.slice(eq + 1).trim());
  }
  return tags;
}

export async function checkDkim(resolver: DnsResolver, r: ExpectedRecord): Promise<RecordCheck> {
  const key = r.dkim!;
  const answer = await lookupTxt(resolver, r.host);
  if (answer.kind === 'temporary') return temporary(r.host, answer.code);
  const records = answer.kind === 'records' ? answer.records : [];
  if (!records.length) return { state: 'missing', found: [], detail: `no TXT record at ${r.host}` };
  const problems: string[] = [];
  for (const record of records) {
    const tags = parseTags(record);
    const v = tags.get('v');
    if (v !== undefined && v !== 'DKIM1') continue;
    const p = (tags.get('p') ?? '').replace(/\s+/g, '');
    const k = (tags.get('k') ?? 'rsa').toLowerCase();
    if (!tags.has('p')) problems.push('the record has no p= tag');
    else if (!p) problems.push('p= is empty, which revokes the key');
    else if (p !== key.publicKey) problems.push('p= holds a different public key');
    else if (k !== key.algorithm) problems.push(`k=${k} but the key is ${key.algorithm}`);
    else return { state: 'verified', found: null, detail: null };
  }
  const detail = problems.length ? problems.join('; ') : 'no DKIM record (v=DKIM1) among the TXT records';
  return { state: 'mismatch', found: records, detail };
}

/**
 * SPF is evaluated by mailauth for every sending IP, as a receiver would for
 * MAIL FROM postmaster@<domain>, so include: and redirect= count.
 */
export async function checkSpf(resolver: DnsResolver, config: Config, domain: string): Promise<RecordCheck> {
  const ips = [...new Set(config.ips.map((ip) => ip.address))];
  const [answer, results] = await Promise.all([
    lookupTxt(resolver, domain),
    Promise.all(
      ips.map(async (ip) => ({
        ip,
        result: await spf({ sender: `postmaster@${domain}`, ip, helo: config.hostname, mta: config.hostname, resolver: resolver.forMailauth }),
      })),
    ),
  ]);
  const found = answer.kind === 'records' ? answer.records.filter((t) => /^v=spf1(\s|$)/i.test(t)) : [];
  if (!ips.length) return { state: 'mismatch', found, detail: 'no sending IPs are configured (ips), so SPF cannot pass' };
  const failed = results.filter((r) => r.result.status.result !== 'pass');
  if (!failed.length) return { state: 'verified', found: null, detail: null };
  const temp = failed.find((r) => r.result.status.result === 'temperror');
  if (temp) return { state: 'temporary_error', found: null, detail: `SPF temperror for ${temp.ip}: ${stripMta(temp.result, config)}` };
  const detail = failed.map((r) => `SPF ${r.result.status.result} for ${r.ip}`).join('; ');
  // No SPF record at all is reported as missing (result none); every other result is a mismatch.
  const state = failed.every((r) => r.result.status.result === 'none') && !found.length ? 'missing' : 'mismatch';
  const why = failed.find((r) => r.result.status.result === 'permerror');
  return { state, found, detail: why ? `${detail} (${stripMta(why.result, config)})` : detail };
}

const stripMta = (r: SpfResult, config: Config) => (r.status.comment ?? '').replace(`${config.hostname}: `, '');

const DMARC_POLICIES = new Set(['none', 'quarantine', 'reject']);

/** Why a DMARC record does not parse, or null when it does. */
export function dmarcProblem(record: string): string | null {
  const first = record.split(';')[0].split('=');
  if (first[0].trim().toLowerCase() !== 'v' || first[1]?.trim() !== 'DMARC1') return 'v=DMARC1 must be the first tag';
  const tags = parseTags(record);
  const p = tags.get('p')?.toLowerCase();
  if (p === undefined) return 'p= is missing';
  if (!DMARC_POLICIES.has(p)) return `p=${p} is not none, quarantine or reject`;
  const sp = tags.get('sp')?.toLowerCase();
  if (sp !== undefined && !DMARC_POLICIES.has(sp)) return `sp=${sp} is not none, quarantine or reject`;
  const pct = tags.get('pct');
  if (pct !== undefined && !(/^\d{1,3}$/.test(pct) && Number(pct) <= 100)) return `pct=${pct} is not 0-100`;
  for (const tag of ['adkim', 'aspf']) {
    const v = tags.get(tag)?.toLowerCase();
    if (v !== undefined && v !== 'r' && v !== 's') return `${tag}=${v} is not r or s`;
  }
  return null;
}

export type DmarcLookup =
  | { kind: 'found'; host: string; records: string[] }
  | { kind: 'missing'; host: string; others: string[] }
  | { kind: 'temporary'; host: string; code: string };

/** The v=DMARC1 records at _dmarc.<domain>, falling back to parent domains (a subdomain inherits its organisation's policy). */
export async function findDmarc(resolver: DnsResolver, domain: string): Promise<DmarcLookup> {
  const labels = domain.split('.');
  for (let i = 0; i <= labels.length - 2; i++) {
    const host = `_dmarc.${labels.slice(i).join('.')}`;
    const answer = await lookupTxt(resolver, host);
    if (answer.kind === 'temporary') return { kind: 'temporary', host, code: answer.code };
    const records = answer.kind === 'records' ? answer.records : [];
    // A record with v=DMARC1 anywhere is taken as meant for DMARC, so a misplaced v= is reported, not ignored.
    const dmarc = records.filter((t) => /(^|;)\s*v\s*=\s*DMARC1\s*(;|$)/i.test(t));
    if (dmarc.length) return { kind: 'found', host, records: dmarc };
    if (i === 0 && records.length) return { kind: 'missing', host, others: records };
  }
  return { kind: 'missing', host: `_dmarc.${domain}`, others: [] };
}

export async function checkDmarc(resolver: DnsResolver, domain: string): Promise<RecordCheck> {
  const found = await findDmarc(resolver, domain);
  if (found.kind === 'temporary') return temporary(found.host, found.code);
  if (found.kind === 'missing') {
    return found.others.length ? { state: 'missing', found: found.others, detail: `no v=DMARC1 record at ${found.host}` } : { state: 'missing', found: [], detail: `no TXT record at _dmarc.${domain}` };
  }
  const { host, records } = found;
  if (records.length > 1) return { state: 'mismatch', found: records, detail: `${host} has ${records.length} DMARC records; receivers ignore all of them` };
  const problem = dmarcProblem(records[0]);
  if (problem) return { state: 'mismatch', found: records, detail: problem };
  return { state: 'verified', found: null, detail: host === `_dmarc.${domain}` ? null : `inherited from ${host}` };
}

const sameHost = (a: string, b: string) => a.toLowerCase().replace(/\.$/, '') === b.toLowerCase().replace(/\.$/, '');

/** CNAME to the bounce host (an MX naming it is accepted too). */
export async function checkReturnPath(resolver: DnsResolver, config: Config, r: ExpectedRecord): Promise<RecordCheck> {
  const target = bounceHost(config);
  const found: string[] = [];
  try {
    const cnames = (await resolver.forMailauth(r.host, 'CNAME')) as string[];
    if (cnames.some((c) => sameHost(c, target))) return { state: 'verified', found: null, detail: null };
    found.push(...cnames.map((c) => `CNAME ${c}`));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'EUNKNOWN';
    if (!NOT_FOUND_CODES.has(code)) return temporary(r.host, code);
  }
  if (!found.length) {
    try {
      const mx = await resolver.mx(r.host);
      if (mx.some((m) => sameHost(m.exchange, target))) return { state: 'verified', found: null, detail: 'MX to the bounce host' };
      found.push(...mx.map((m) => `MX ${m.priority} ${m.exchange}`));
    } catch (err) {
      if (err instanceof DnsError && err.kind === 'temporary') return temporary(r.host, err.code);
    }
  }
  if (!found.length) return { state: 'missing', found, detail: `no CNAME at ${r.host}` };
  return { state: 'mismatch', found, detail: `${r.host} must point at ${target}` };
}
