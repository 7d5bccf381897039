/**
 * Doctor check: every sending IP needs forward-confirmed reverse DNS. Its PTR
 * must name the IP's configured hostname (the EHLO name) and that hostname
 * must resolve back to the IP; many receivers reject or junk mail otherwise.
 */
import ipaddr from 'ipaddr.js';
import type { Config } from '../config';
import { createResolver, DnsError, type DnsResolver } from '../dns/resolver';
import type { CheckResult } from './doctor';

const sameHost = (a: string, b: string) => a.toLowerCase().replace(/\.$/, '') === b.toLowerCase().replace(/\.$/, '');
const sameIp = (a: string, b: string) => ipaddr.parse(a).toNormalizedString() === ipaddr.parse(b).toNormalizedString();

function dnsTrouble(err: unknown): string {
  return err instanceof DnsError ? (err.kind === 'temporary' ? `DNS failed (${err.code})` : 'no record') : (err as Error).message;
}

async function checkOne(resolver: DnsResolver, ip: { address: string; hostname: string }): Promise<CheckResult> {
  const name = `ptr ${ip.address}`;
  const fix = `ask the owner of ${ip.address} (your hosting provider) to set its PTR to ${ip.hostname}`;
  let names: string[];
  try {
    names = await resolver.ptr(ip.address);
  } catch (err) {
    const temporary = err instanceof DnsError && err.kind === 'temporary';
    return { name, status: temporary ? 'warn' : 'fail', detail: `reverse lookup: ${dnsTrouble(err)}; ${fix}` };
  }
  if (!names.some((n) => sameHost(n, ip.hostname))) {
    return { name, status: 'fail', detail: `PTR is ${names.join(', ') || '(empty)'}, not ${ip.hostname}; ${fix}` };
  }
  let addresses: string[];
  try {
    addresses = ipaddr.parse(ip.address).kind() === 'ipv6' ? await resolver.aaaa(ip.hostname) : await resolver.a(ip.hostname);
  } catch (err) {
    return { name, status: 'fail', detail: `${ip.hostname} does not resolve (${dnsTrouble(err)}); add an address record pointing at ${ip.address}` };
  }
  if (!addresses.some((a) => sameIp(a, ip.address))) {
    return { name, status: 'fail', detail: `${ip.hostname} resolves to ${addresses.join(', ')}, not ${ip.address}; add ${ip.address} to its address records` };
  }
  return { name, status: 'ok', detail: `${ip.address} ⇄ ${ip.hostname} (forward-confirmed)` };
}

export async function checkPtr(config: Config): Promise<CheckResult[]> {
  const resolver = createResolver(config);
  return Promise.all(config.ips.map((ip) => checkOne(resolver, ip)));
}
