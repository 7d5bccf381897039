/**
 * Doctor check: every sending IP needs forward-confirmed reverse DNS (the
 * check itself is src/reputation/fcrdns.ts, shared with the reputation watch).
 */
import type { Config } from '../config';
import { createResolver } from '../dns/resolver';
import { checkFcrdns } from '../reputation/fcrdns';
import type { CheckResult } from './doctor';

export async function checkPtr(config: Config): Promise<CheckResult[]> {
  const resolver = createResolver(config);
  return Promise.all(config.ips.map(async (ip) => ({ name: `ptr ${ip.address}`, ...(await checkFcrdns(resolver, ip)) })));
}
