/**
 * `pigeon doctor` check: what the reputation watch last found for each
 * sending address in each DNSBL zone (stored by the running server; the
 * doctor itself sends no DNSBL queries, which public zones rate-limit).
 * Reverse DNS is checked live by the doctor's PTR check.
 */
import { iso } from '../clock';
import type { Config } from '../config';
import { openDatabase } from '../db';
import type { CheckResult } from '../cli/doctor';
import { checksOf, FCRDNS, type CheckRecord } from './store';

function listingResult(c: CheckRecord): CheckResult {
  const name = `dnsbl ${c.address} ${c.check}`;
  const error = c.error ? `; the last lookup failed: ${c.error}` : '';
  if (c.state === 'listed') {
    const why = [c.codes.join(', '), c.detail].filter(Boolean).join(': ');
    return { name, status: 'fail', detail: `listed since ${iso(c.since)} (${why}); find the cause (a compromised sender, a bad list) and request delisting from ${c.check}${error}` };
  }
  if (c.state === 'unknown') return { name, status: 'warn', detail: `never answered${error}` };
  return { name, status: c.error ? 'warn' : 'ok', detail: `not listed (checked ${iso(c.checkedAt)})${error}` };
}

export async function checkReputation(config: Config): Promise<CheckResult[]> {
  if (!config.reputation.enabled) {
    return [{ name: 'reputation watch', status: 'warn', detail: 'off: set reputation.enabled to check the sending addresses against DNSBLs hourly (use a resolver of your own)' }];
  }
  const db = openDatabase(config);
  try {
    const stored = await checksOf(db, config.ips.map((ip) => ip.address));
    return config.ips.flatMap((ip): CheckResult[] => {
      const listings = (stored.get(ip.address) ?? []).filter((c) => c.check !== FCRDNS);
      if (!listings.length) return [{ name: `dnsbl ${ip.address}`, status: 'warn', detail: 'not checked yet (the running server checks within a minute of its start)' }];
      return listings.map(listingResult);
    });
  } catch {
    return []; // the database check reports an unreachable database
  } finally {
    await db.destroy();
  }
}
