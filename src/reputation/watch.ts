/**
 * The reputation watch: every `reputation.intervalMinutes` (an hour by
 * default) each sending address in config `ips` is looked up in each DNSBL
 * zone of `reputation.dnsblZones` and has its forward-confirmed reverse DNS
 * checked, through the configured resolver. Results are stored per address and
 * check (store.ts); a change of listing is an `ip.listed` / `ip.delisted`
 * event for every account that uses the address (pools/lookup.ts
 * accountsUsing), written with the state in one transaction of the app's
 * writer, so an event exists exactly when its state change does.
 *
 * Off unless `reputation.enabled`: public DNSBLs rate-limit, and Spamhaus
 * refuses queries through public resolvers. The first run comes a minute
 * after the start, or when the last stored check is as old as the interval
 * (a restart does not query again at once).
 */
import { iso } from '../clock';
import type { AppDeps } from '../deps';
import { createResolver, type DnsResolver } from '../dns/resolver';
import { recordEvent } from '../events/record';
import type { Tx } from '../db';
import type { Worker } from '../modules';
import { pollingWorker } from '../util/polling-worker';
import { accountsUsing } from '../pools/lookup';
import { lookupDnsbl, type DnsblResult } from './dnsbl';
import { checkFcrdns, type FcrdnsResult } from './fcrdns';
import { createReputationMetrics } from './metrics';
import { currentCheck, FCRDNS, noteError, saveCheck, type CheckRecord } from './store';

const POLL_MS = 60_000;
const MINUTE = 60_000;

type SourceIp = AppDeps['config']['ips'][number];

export function createReputationWatch(deps: AppDeps): Worker {
  const cfg = deps.config.reputation;
  createReputationMetrics(deps);
  let lastRunAt: number | undefined;
  async function due(now: number): Promise<boolean> {
    if (lastRunAt === undefined) {
      const row = await deps.reader('ip_reputation').max({ at: 'checked_at' }).first();
      lastRunAt = row?.at === null || row?.at === undefined ? -Infinity : Number(row.at);
    }
    return now - lastRunAt >= cfg.intervalMinutes * MINUTE;
  }

  async function runDue(stopping: () => boolean): Promise<void> {
    const now = deps.clock.now();
    if (!cfg.enabled || !(await due(now))) return;
    lastRunAt = now;
    const resolver = createResolver(deps.config);
    for (const ip of deps.config.ips) {
      if (stopping()) return;
      const [listings, fcrdns] = await Promise.all([
        Promise.all(cfg.dnsblZones.map(async (zone) => [zone, await lookupDnsbl(resolver, ip.address, zone)] as const)),
        checkFcrdns(resolver as DnsResolver, ip),
      ]);
      const events = await deps.writer.run((trx) => recordChecks(trx, deps, ip, listings, fcrdns, deps.clock.now()));
      if (events) deps.signals.emit('webhooksChanged');
    }
  }

  // the first check comes with the first poll, a minute after the start
  return pollingWorker({ name: 'reputation', everyMs: POLL_MS, enabled: cfg.enabled, log: deps.log, failure: 'reputation check failed', runDue });
}

/** Stores one address's results; returns how many events it recorded. */
async function recordChecks(
  trx: Tx, deps: AppDeps, ip: SourceIp, listings: ReadonlyArray<readonly [string, DnsblResult]>, fcrdns: FcrdnsResult, now: number,
): Promise<number> {
  let events = 0;
  for (const [zone, result] of listings) events += await recordListing(trx, deps, ip.address, zone, result, now);
  if (fcrdns.status === 'warn') await noteOrKeep(trx, ip.address, FCRDNS, fcrdns.detail, now);
  else await settle(trx, ip.address, FCRDNS, { state: fcrdns.status, detail: fcrdns.detail, codes: [] }, now);
  return events;
}

async function recordListing(trx: Tx, deps: AppDeps, address: string, zone: string, r: DnsblResult, now: number): Promise<number> {
  if (r.state === 'error') {
    await noteOrKeep(trx, address, zone, r.error, now);
    deps.log.warn({ address, zone, error: r.error }, 'DNSBL lookup failed; the last known state stays');
    return 0;
  }
  const previous = await settle(trx, address, zone, r.state === 'listed' ? { state: 'listed', detail: r.reason, codes: r.codes } : { state: 'clear', detail: null, codes: [] }, now);
  if (r.state === 'listed' && previous?.state !== 'listed') {
    deps.log.warn({ address, zone, codes: r.codes, reason: r.reason }, 'sending address listed on a DNSBL');
    return notify(trx, deps, address, 'ip.listed', (pools) => ({ address, zone, listed_at: iso(now), codes: r.codes, reason: r.reason, pools }), now);
  }
  if (r.state === 'clear' && previous?.state === 'listed') {
    deps.log.info({ address, zone }, 'sending address delisted from a DNSBL');
    return notify(trx, deps, address, 'ip.delisted', (pools) => ({ address, zone, delisted_at: iso(now), pools }), now);
  }
  return 0;
}

/** Writes the answered state (its `since` kept while it holds) and returns the state before. */
async function settle(trx: Tx, address: string, check: string, s: Pick<CheckRecord, 'state' | 'detail' | 'codes'>, now: number): Promise<CheckRecord | undefined> {
  const previous = await currentCheck(trx, address, check);
  const since = previous?.state === s.state ? previous.since : now;
  await saveCheck(trx, { address, check, ...s, since, checkedAt: now, error: null, errorAt: null });
  return previous;
}

/** A check that never answered yet has no state to keep: it is stored as `unknown` until one does. */
async function noteOrKeep(trx: Tx, address: string, check: string, error: string, now: number): Promise<void> {
  if (await noteError(trx, address, check, error, now)) return;
  await saveCheck(trx, { address, check, state: 'unknown', detail: null, codes: [], since: now, checkedAt: now, error, errorAt: now });
}

async function notify(trx: Tx, deps: AppDeps, address: string, type: 'ip.listed' | 'ip.delisted', data: (pools: string[]) => Record<string, unknown>, now: number): Promise<number> {
  const users = await accountsUsing(trx, deps.config, address);
  for (const u of users) await recordEvent(trx, { accountId: u.accountId, mode: 'live', type, messageId: null, data: data(u.pools), at: now });
  return users.length;
}
