/**
 * Read-only questions other modules ask about sending domains: the send rule
 * (is the From domain verified?) on every send, the return path on every
 * delivery. Given the app's handle they are answered from a per-account cache
 * of the account's domains (one query per account per DOMAIN_CACHE_TTL_MS),
 * cleared by this module's writes (add, verify, re-check, rotate, delete):
 * `forgetAccountDomains`. A change made by another process (the CLI) is seen
 * within the TTL. Given a transaction they read through it.
 */
import type { Queryable } from '../db';
import { hasReader, readerOf } from '../db/reader';
import { cachePerApp, ReadCache } from '../util/read-cache';
import { lookupName } from './name';

/** What the send and delivery paths need to know of one of the account's domains. */
interface DomainFacts {
  /** verified, or failing but in grace */
  sendable: boolean;
  returnPathVerified: boolean;
}

export const DOMAIN_CACHE_TTL_MS = 2_000;
// Keyed by authenticated account ids; each entry holds at most limits.domainsPerAccount names (CLI adds aside).
const DOMAIN_CACHE_MAX = 10_000;

async function loadAccountDomains(db: Queryable, accountId: string): Promise<Map<string, DomainFacts>> {
  const rows: Array<{ name: string; status: string; rp: number | null }> = await db('domains')
    .leftJoin('domain_record_checks as c', (j) => j.on('c.domain_id', 'domains.id').andOnVal('c.record', 'return_path').andOnVal('c.state', 'verified'))
    .where('domains.account_id', accountId)
    .select('domains.name', 'domains.status', db.raw('c.domain_id is not null as rp'));
  return new Map(rows.map((r) => [r.name, { sendable: r.status === 'verified' || r.status === 'failing', returnPathVerified: Boolean(r.rp) }]));
}

const domainCache = cachePerApp('domains', hasReader, (db: Queryable) =>
  new ReadCache<string, Map<string, DomainFacts>>({ max: DOMAIN_CACHE_MAX, ttlMs: DOMAIN_CACHE_TTL_MS, load: (id) => loadAccountDomains(readerOf(db), id) }));

async function factsOf(db: Queryable, accountId: string, name: string): Promise<DomainFacts | undefined> {
  const cache = domainCache(db);
  const domains = cache ? await cache.get(accountId) : await loadAccountDomains(db, accountId);
  return domains?.get(name);
}

/** Called with the app's handle after a write to the account's domains has committed. */
export function forgetAccountDomains(db: Queryable, accountId: string): void {
  domainCache.invalidate(db, accountId);
}

/**
 * True when the account has this exact domain (not a parent) in status verified or failing-but-in-grace.
 * The name is normalised as stored (lower-case, IDN as punycode), so `bücher.example` finds `xn--bcher-kva.example`.
 */
export async function isVerifiedDomain(db: Queryable, accountId: string, domain: string): Promise<boolean> {
  const name = lookupName(domain);
  if (!name) return false;
  return (await factsOf(db, accountId, name))?.sendable ?? false;
}

/**
 * `<returnPathLabel>.<domain>` when the account's domain has that record
 * verified (a CNAME to the bounce host), so the envelope sender can align with
 * the From domain for SPF; otherwise null (use the appliance's bounce domain).
 */
export async function getReturnPathDomain(db: Queryable, accountId: string, domain: string, returnPathLabel: string): Promise<string | null> {
  const name = lookupName(domain);
  if (!name) return null;
  return (await factsOf(db, accountId, name))?.returnPathVerified ? `${returnPathLabel}.${name}` : null;
}
