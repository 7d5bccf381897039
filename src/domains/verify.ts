/**
 * Verification: look every expected record up, store each record's state,
 * and move the domain between pending, verified and failing. The same code
 * serves POST /v1/domains/{domain}/verify, `pigeon domains verify` and the
 * re-check worker.
 *
 *   pending  --DKIM and SPF verified-->  verified            (domain.verified)
 *   verified --a required record fails--> failing            (domain.failing; still sendable)
 *   failing  --records back-->            verified           (domain.verified)
 *   failing  --grace over, not back-->    pending            (domain.unverified)
 *
 * A temporary DNS error never starts failing a verified domain; it only counts
 * against a failing one whose grace has run out.
 */
import type { Config } from '../config';
import type { Queryable } from '../db';
import { createResolver, type DnsResolver } from '../dns/resolver';
import { checkDkim, checkDmarc, checkReturnPath, checkSpf } from './checks';
import { forgetAccountDomains } from './lookup';
import { expectedRecords, type ExpectedRecord } from './records';
import {
  findDomainById, insertDomainEvent, keysOf, promoteKey, saveChecks, updateDomainState,
  type Domain, type DomainEventType, type DomainKey, type RecordCheck,
} from './repository';
import type { DomainsContext } from './service';

const HOUR = 3_600_000;

/** The resolver verification uses: `dns.servers`, with the shorter verification timeout. */
export function verificationResolver(config: Config): DnsResolver {
  return createResolver({ dns: { ...config.dns, timeoutMs: config.domains.dnsTimeoutMs } });
}

async function checkOne(resolver: DnsResolver, config: Config, domain: string, r: ExpectedRecord): Promise<RecordCheck> {
  switch (r.purpose) {
    case 'dkim':
      return checkDkim(resolver, r);
    case 'spf':
      return checkSpf(resolver, config, domain);
    case 'dmarc':
      return checkDmarc(resolver, domain);
    case 'return_path':
      return checkReturnPath(resolver, config, r);
  }
}

/** Every record checked in parallel; an unexpected failure of one check is a temporary error, not a 500. */
export async function runChecks(ctx: DomainsContext, domain: string, expected: ExpectedRecord[]): Promise<Map<string, RecordCheck>> {
  const resolver = ctx.resolver ?? verificationResolver(ctx.config);
  const results = await Promise.all(
    expected.map((r) =>
      checkOne(resolver, ctx.config, domain, r).catch((err: Error): RecordCheck => {
        ctx.log?.warn({ domain, record: r.key, err: err.message }, 'domain record check failed unexpectedly');
        return { state: 'temporary_error', found: null, detail: 'the check could not complete; try again later' };
      }),
    ),
  );
  return new Map(expected.map((r, i) => [r.key, results[i]]));
}

type Outcome = 'pass' | 'fail' | 'unknown';

/** DKIM (of the signing key) and SPF decide; a definite failure of either beats a temporary error. */
function outcomeOf(states: Array<RecordCheck['state'] | undefined>): Outcome {
  if (states.every((s) => s === 'verified')) return 'pass';
  if (states.some((s) => s === 'mismatch' || s === 'missing' || s === undefined)) return 'fail';
  return 'unknown';
}

/** The next state of a domain after a check at `now`; the event to record, if the state changed. */
export function transition(d: Domain, outcome: Outcome, now: number, graceMs: number): { next: Domain; event?: DomainEventType } {
  const next: Domain = { ...d, lastCheckedAt: now };
  if (outcome === 'pass') {
    if (d.status === 'verified') return { next };
    return { next: { ...next, status: 'verified', verifiedAt: d.status === 'pending' ? now : (d.verifiedAt ?? now), failingSince: null }, event: 'domain.verified' };
  }
  if (d.status === 'verified' && outcome === 'fail') {
    return { next: { ...next, status: 'failing', failingSince: now }, event: 'domain.failing' };
  }
  if (d.status === 'failing' && now - (d.failingSince ?? now) >= graceMs) {
    return { next: { ...next, status: 'pending', verifiedAt: null, failingSince: null }, event: 'domain.unverified' };
  }
  return { next };
}

/**
 * Checks a domain's records and applies the outcome. Returns the domain as
 * stored afterwards, or undefined if it was deleted meanwhile.
 */
export async function verifyDomain(ctx: DomainsContext, domain: Domain): Promise<Domain | undefined> {
  const keys = (await keysOf(ctx.db, [domain.id])).get(domain.id) ?? [];
  const expected = expectedRecords(ctx.config, domain.name, keys);
  const checks = await runChecks(ctx, domain.name, expected);
  const now = ctx.clock.now();
  const graceMs = ctx.config.domains.failingGraceHours * HOUR;
  const events: DomainEventType[] = [];
  const stored = await ctx.db.transaction(async (trx) => {
    // Re-read inside the transaction: the worker and an API call may check the same domain.
    const current = await findDomainById(trx, domain.id);
    if (!current) return undefined;
    await saveChecks(trx, domain.id, checks, now);
    const signing = await promoteVerifiedKeys(trx, current, keys, checks, now);
    if (signing.promoted) events.push('domain.dkim_rotated');
    // The primary key and SPF decide, and an active second key too: a signature receivers cannot check is a failure.
    const primary = signing.active.find((k) => k.role === 'primary');
    const dkimStates = [primary, ...signing.active.filter((k) => k.role === 'second')].map((k) => k && checks.get(`dkim:${k.selector}`)?.state);
    const outcome = outcomeOf([...dkimStates, checks.get('spf')?.state]);
    const { next, event } = transition(current, outcome, now, graceMs);
    await updateDomainState(trx, next);
    if (event) {
      await recordEvent(trx, next, event, now, { previous_status: current.status, records: summary(expected, checks) });
      events.push(event);
    }
    return next;
  });
  // After the commit: the send rule and the return path follow the new state from the next send on.
  forgetAccountDomains(ctx.db, domain.accountId);
  if (stored && events.length) {
    ctx.log?.info({ domain: stored.name, accountId: stored.accountId, status: stored.status, events }, 'domain state changed');
    ctx.signals?.emit('domainEvents');
  }
  return stored;
}

/**
 * A pending key (a rotation, or a second key added to an existing domain)
 * whose record verified replaces the active key of its role; each promotion is
 * a domain.dkim_rotated event. Returns the keys active afterwards.
 */
async function promoteVerifiedKeys(
  trx: Queryable, domain: Domain, keys: DomainKey[], checks: Map<string, RecordCheck>, now: number,
): Promise<{ active: DomainKey[]; promoted: boolean }> {
  const active = keys.filter((k) => k.status === 'active');
  let promoted = false;
  for (const pending of keys.filter((k) => k.status === 'pending')) {
    if (checks.get(`dkim:${pending.selector}`)?.state !== 'verified') continue;
    const previous = active.findIndex((k) => k.role === pending.role);
    await promoteKey(trx, domain.id, pending, now);
    await recordEvent(trx, domain, 'domain.dkim_rotated', now, {
      selector: pending.selector, previous_selector: previous < 0 ? null : active[previous].selector, key_role: pending.role,
    });
    if (previous < 0) active.push(pending);
    else active[previous] = pending;
    promoted = true;
  }
  return { active, promoted };
}

function summary(expected: ExpectedRecord[], checks: Map<string, RecordCheck>): Array<{ purpose: string; host: string; state: string }> {
  return expected.map((r) => ({ purpose: r.purpose, host: r.host, state: checks.get(r.key)?.state ?? 'pending' }));
}

async function recordEvent(db: Queryable, d: Domain, type: DomainEventType, now: number, extra: Record<string, unknown>): Promise<void> {
  await insertDomainEvent(db, {
    accountId: d.accountId,
    domainId: d.id,
    domain: d.name,
    type,
    createdAt: now,
    data: {
      domain: d.name,
      status: d.status,
      verified_at: d.verifiedAt === null ? null : new Date(d.verifiedAt).toISOString(),
      failing_since: d.failingSince === null ? null : new Date(d.failingSince).toISOString(),
      ...extra,
    },
  });
}

export { recordEvent as recordDomainEvent };
