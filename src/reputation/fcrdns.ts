/**
 * Forward-confirmed reverse DNS of a sending address: its PTR must name the
 * address's configured hostname (the EHLO name) and that hostname must
 * resolve back to the address; many receivers (Gmail and Yahoo among them)
 * reject or junk mail otherwise. Used by `pigeon doctor` and the reputation
 * watch. `warn` is a lookup that failed for now (SERVFAIL, timeout).
 */
import ipaddr from 'ipaddr.js';
import { DnsError, type DnsResolver } from '../dns/resolver';

export interface FcrdnsResult {
  status: 'ok' | 'warn' | 'fail';
  detail: string;
}

const sameHost = (a: string, b: string) => a.toLowerCase().replace(/\.$/, '') === b.toLowerCase().replace(/\.$/, '');
const sameIp = (a: string, b: string) => ipaddr.parse(a).toNormalizedString() === ipaddr.parse(b).toNormalizedString();

function dnsTrouble(err: unknown): string {
  return err instanceof DnsError ? (err.kind === 'temporary' ? `DNS failed (${err.code})` : 'no record') : (err as Error).message;
}

export async function checkFcrdns(resolver: DnsResolver, ip: { address: string; hostname: string }): Promise<FcrdnsResult> {
  const fix = `ask the owner of ${ip.address} (your hosting provider) to set its PTR to ${ip.hostname}`;
  let names: string[];
  try {
    names = await resolver.ptr(ip.address);
  } catch (err) {
    const temporary = err instanceof DnsError && err.kind === 'temporary';
    return { status: temporary ? 'warn' : 'fail', detail: `reverse lookup: ${dnsTrouble(err)}; ${fix}` };
  }
  if (!names.some((n) => sameHost(n, ip.hostname))) {
    return { status: 'fail', detail: `PTR is ${names.join(', ') || '(empty)'}, not ${ip.hostname}; ${fix}` };
  }
  let addresses: string[];
  try {
    addresses = ipaddr.parse(ip.address).kind() === 'ipv6' ? await resolver.aaaa(ip.hostname) : await resolver.a(ip.hostname);
  } catch (err) {
    return { status: 'fail', detail: `${ip.hostname} does not resolve (${dnsTrouble(err)}); add an address record pointing at ${ip.address}` };
  }
  if (!addresses.some((a) => sameIp(a, ip.address))) {
    return { status: 'fail', detail: `${ip.hostname} resolves to ${addresses.join(', ')}, not ${ip.address}; add ${ip.address} to its address records` };
  }
  return { status: 'ok', detail: `${ip.address} ⇄ ${ip.hostname} (forward-confirmed)` };
}
