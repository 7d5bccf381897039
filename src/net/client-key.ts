/**
 * The key under which per-client limits count a client address. One IPv4
 * address is what one client can cheaply hold, but an IPv6 host is routinely
 * given a whole /64 (18 quintillion addresses) and can pick a new source
 * address for every connection: counted by full address, it would rotate past
 * every limit. So IPv6 is counted by its /64, IPv4-mapped IPv6
 * (`::ffff:192.0.2.1`, how a dual-stack socket reports IPv4) as the IPv4
 * address, and anything unparseable as it is.
 */
import ipaddr from 'ipaddr.js';

export function rateLimitKey(address: string): string {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address.replace(/^\[|\]$/g, ''));
  } catch {
    return address;
  }
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const v6 = parsed as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString();
  return `${new ipaddr.IPv6([...v6.parts.slice(0, 4), 0, 0, 0, 0]).toString()}/64`;
}
