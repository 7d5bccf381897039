/**
 * Which MTA-STS policy applies to a recipient domain, and whether the domain
 * asks for TLS reports (RFC 8461 §5, RFC 8460 §3). Per domain:
 *
 *   TXT _mta-sts.<domain> and _smtp._tls.<domain>, through the configured resolver
 *   no STS record (or DNS failing) → the stored policy while its max_age lasts, else none
 *   same id as the stored policy   → the stored policy
 *   new id, or nothing stored      → fetch https://mta-sts.<domain>/.well-known/mta-sts.txt,
 *                                    store it; a failed fetch keeps the stored one
 *
 * Answers are kept in memory for `delivery.mxCacheSeconds` in an LRU of
 * `delivery.mtaSts.cacheEntries` domains, and concurrent lookups of one
 * domain share one resolution.
 */
import type { Clock } from '../clock';
import type { Config } from '../config';
import type { Queryable } from '../db';
import type { Tx } from '../db';
import { createResolver, DnsError, type DnsResolver } from '../dns/resolver';
import type { Logger } from '../logger';
import { LruMap } from '../util/lru';
import { httpsRequest } from './https';
import { parsePolicy, parseStsRecord, parseTlsRptRecord, type StsPolicy } from './policy';
import { deliveryCas, savePolicy, storedPolicy } from './store';

/** What delivery to one domain must meet, and who hears how it went. */
export interface TlsPlan {
  domain: string;
  /** the policy in force (mode none included), or null */
  policy: StsPolicy | null;
  /** the domain publishes _smtp._tls with a usable rua: its sessions are counted for a report */
  reporting: boolean;
}

export type PlanFor = (domain: string) => Promise<TlsPlan>;

export interface TlsPolicyDeps {
  config: Config;
  clock: Clock;
  reader: Queryable;
  transact: <T>(work: (trx: Tx) => Promise<T>) => Promise<T>;
  log: Logger;
}

/** RFC 8461 §3.3: the policy body is at most 64 KiB. */
const POLICY_MAX_BYTES = 64 * 1024;

export function createPolicyResolver(deps: TlsPolicyDeps): PlanFor {
  const { config, clock } = deps;
  const dns = createResolver(config);
  const ttlMs = config.delivery.mxCacheSeconds * 1000;
  const cache = new LruMap<string, { plan: TlsPlan; until: number }>(config.delivery.mtaSts.cacheEntries);
  // Domains whose policy fetch failed lately, and until when not to try again: a domain pointing its policy
  // host at a tarpit would otherwise hold a delivery slot for the fetch timeout at every MX cache expiry.
  const failures = new LruMap<string, number>(config.delivery.mtaSts.cacheEntries);
  // Bounded by the deliveries in flight (delivery.concurrency); each entry removes itself when settled.
  const pending = new Map<string, Promise<TlsPlan>>();
  return (raw) => {
    const domain = raw.toLowerCase().replace(/\.$/, '');
    if (!config.delivery.mtaSts.enabled && !config.delivery.tlsReports.enabled) return Promise.resolve({ domain, policy: null, reporting: false });
    const hit = cache.get(domain);
    if (hit && hit.until > clock.now()) return Promise.resolve(hit.plan);
    const running = pending.get(domain);
    if (running) return running;
    const promise = resolvePlan(deps, dns, domain, failures).then((plan) => {
      // The policy text (up to 64 KiB) stays in the database, where the report reads it: not × cacheEntries here.
      if (ttlMs > 0) cache.set(domain, { plan: { ...plan, policy: plan.policy && { ...plan.policy, text: '' } }, until: clock.now() + ttlMs });
      return plan;
    }).finally(() => pending.delete(domain));
    pending.set(domain, promise);
    return promise;
  };
}

/** How long a failed policy fetch is not retried for its domain (the stored policy, if any, applies meanwhile). */
const FETCH_RETRY_MS = 5 * 60_000;

async function resolvePlan(deps: TlsPolicyDeps, dns: DnsResolver, domain: string, failures: LruMap<string, number>): Promise<TlsPlan> {
  const { mtaSts, tlsReports } = deps.config.delivery;
  const [policy, rua] = await Promise.all([
    mtaSts.enabled ? currentPolicy(deps, dns, domain, failures) : null,
    tlsReports.enabled ? txt(dns, `_smtp._tls.${domain}`).then((t) => (t ? parseTlsRptRecord(t) : null)) : null,
  ]);
  return { domain, policy, reporting: rua !== null };
}

async function currentPolicy(deps: TlsPolicyDeps, dns: DnsResolver, domain: string, failures: LruMap<string, number>): Promise<StsPolicy | null> {
  const now = deps.clock.now();
  const [record, stored] = await Promise.all([txt(dns, `_mta-sts.${domain}`), storedPolicy(deps.reader, domain)]);
  const valid = stored && stored.expiresAt > now ? stored : null;
  const id = record ? parseStsRecord(record) : null;
  if (!id || valid?.id === id) return valid;
  if ((failures.get(domain) ?? 0) > now) return valid;
  const fetched = await fetchPolicy(deps, domain, id);
  if ('error' in fetched) {
    failures.set(domain, now + FETCH_RETRY_MS);
    deps.log.warn({ domain, error: fetched.error, cached: Boolean(valid) }, 'MTA-STS policy fetch failed');
    return valid;
  }
  failures.delete(domain);
  await deps.transact((trx) => savePolicy(trx, domain, fetched));
  return fetched;
}

/** The TXT set of a name, or null when there is none (or DNS fails: a policy is then judged by what is stored). */
async function txt(dns: DnsResolver, name: string): Promise<string[][] | null> {
  try {
    return await dns.txt(name);
  } catch (err) {
    if (err instanceof DnsError) return null;
    throw err;
  }
}

async function fetchPolicy(deps: TlsPolicyDeps, domain: string, id: string): Promise<StsPolicy | { error: string }> {
  const { mtaSts, tlsCaFile } = deps.config.delivery;
  const port = mtaSts.httpsPort === 443 ? '' : `:${mtaSts.httpsPort}`;
  const url = new URL(`https://mta-sts.${domain}${port}/.well-known/mta-sts.txt`);
  const res = await httpsRequest(deps.config, { url, method: 'GET', timeoutMs: mtaSts.fetchTimeoutMs, maxBytes: POLICY_MAX_BYTES, ca: deliveryCas(tlsCaFile) });
  if (!res.ok) return { error: res.error };
  if (res.status !== 200) return { error: `HTTP ${res.status} (redirects are not followed)` };
  if (!/^text\/plain\b/i.test(res.contentType)) return { error: `media type ${res.contentType || '(none)'} is not text/plain` };
  const text = res.body.toString('utf8');
  const parsed = parsePolicy(text);
  if ('invalid' in parsed) return { error: `invalid policy: ${parsed.invalid}` };
  const now = deps.clock.now();
  return { id, ...parsed, text, fetchedAt: now, expiresAt: now + parsed.maxAge * 1000 };
}
