/**
 * One DNSBL lookup (RFC 5782): the address reversed (IPv4 octets, IPv6
 * nibbles) under the zone, asked for A records through the configured
 * resolver. An answer in 127.0.0.0/8 is a listing (its TXT gives the reason);
 * NXDOMAIN is "not listed". Anything else says nothing about the address:
 * SERVFAIL or a timeout, and the 127.255.255.x answers Spamhaus gives a
 * resolver it refuses (public resolvers, too many queries), which must never
 * be read as a listing.
 */
import ipaddr from 'ipaddr.js';
import { DnsError, type DnsResolver } from '../dns/resolver';

export type DnsblResult =
  | { state: 'listed'; codes: string[]; reason: string | null }
  | { state: 'clear' }
  | { state: 'error'; error: string };

/** `1.2.3.4` under zen.spamhaus.org → `4.3.2.1.zen.spamhaus.org`; IPv6 by nibbles. */
export function dnsblQueryName(address: string, zone: string): string {
  const ip = ipaddr.process(address);
  if (ip.kind() === 'ipv4') return `${ip.toString().split('.').reverse().join('.')}.${zone}`;
  const nibbles = ip.toByteArray().flatMap((b) => [b >> 4, b & 0xf]).map((n) => n.toString(16));
  return `${nibbles.reverse().join('.')}.${zone}`;
}

const inRange = (code: string, range: string): boolean => {
  try {
    const parsed = ipaddr.parse(code);
    return parsed.kind() === 'ipv4' && parsed.match(ipaddr.parseCIDR(range) as [ipaddr.IPv4, number]);
  } catch {
    return false;
  }
};

async function reasonOf(resolver: DnsResolver, name: string): Promise<string | null> {
  try {
    const txt = (await resolver.txt(name)).map((parts) => parts.join('')).join(' ');
    return txt ? txt.slice(0, 500) : null;
  } catch {
    return null; // the reason is a courtesy of the zone; the A answer is the listing
  }
}

export async function lookupDnsbl(resolver: DnsResolver, address: string, zone: string): Promise<DnsblResult> {
  const name = dnsblQueryName(address, zone);
  let codes: string[];
  try {
    codes = await resolver.a(name);
  } catch (err) {
    if (err instanceof DnsError && err.kind !== 'temporary') return { state: 'clear' };
    return { state: 'error', error: `lookup of ${name} failed: ${err instanceof DnsError ? err.code : (err as Error).message}` };
  }
  if (codes.some((c) => inRange(c, '127.255.255.0/24'))) {
    return { state: 'error', error: `${zone} refused the query (${codes.join(', ')}): use a resolver of your own (dns.servers), not a public one` };
  }
  if (!codes.length || !codes.every((c) => inRange(c, '127.0.0.0/8'))) {
    return { state: 'error', error: `${zone} answered ${codes.join(', ') || 'nothing'}, not a 127.0.0.0/8 listing code (a resolver rewriting NXDOMAIN?)` };
  }
  return { state: 'listed', codes: [...codes].sort(), reason: await reasonOf(resolver, name) };
}
