/**
 * Which addresses the appliance may connect to on a stranger's behalf: a
 * webhook receiver (webhooks/ssrf.ts) or a recipient's MX (delivery/transmit.ts).
 * Only plain public unicast passes; loopback, private, link-local, CGNAT,
 * multicast and reserved blocks are refused, and so are IPv6 forms that carry
 * one of those IPv4 addresses inside them:
 *
 * - ::ffff:a.b.c.d (IPv4-mapped) and ::ffff:0:a.b.c.d (IPv4-translated) and
 *   64:ff9b::a.b.c.d (NAT64, RFC 6052) and 2002:AABB:CCDD:: (6to4) are judged
 *   by the IPv4 address they embed;
 * - ::a.b.c.d (IPv4-compatible, ::/96, deprecated by RFC 4291) is refused
 *   outright: nothing legitimate uses it, and some stacks route it to IPv4;
 * - the local-use NAT64 prefix 64:ff9b:1::/48 and Teredo stay refused.
 */
import ipaddr from 'ipaddr.js';

/** The range an address belongs to: 'unicast' for public, else the name of its special block. */
export function addressClass(address: string): string {
  const parsed = parse(address);
  if (!parsed) return 'invalid';
  if (parsed.kind() === 'ipv4') return parsed.range();
  const v6 = parsed as ipaddr.IPv6;
  if (isIpv4Compatible(v6)) return 'ipv4Compatible';
  const embedded = embeddedIpv4(v6);
  return embedded ? embedded.range() : v6.range();
}

/** True only for plain public unicast (directly, or the public IPv4 an IPv6 form embeds). */
export function isPublicAddress(address: string): boolean {
  return addressClass(address) === 'unicast';
}

/** A sentence for diagnostics: "127.0.0.1, a loopback address". */
export function describeAddress(address: string): string {
  return `${address}, a ${addressClass(address)} address`;
}

/**
 * Parses through WHATWG URL first for IPv6: ipaddr.js reads the dotted form
 * ::a.b.c.d as ::ffff:a.b.c.d, while the socket layer dials ::a.b.c.d, so the
 * address is judged in the hex form the kernel sees.
 */
function parse(address: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(address)) return ipaddr.IPv4.parse(address);
  if (!address.includes(':')) return undefined;
  try {
    const hex = new URL(`http://[${address.replace(/^\[|\]$/g, '')}]/`).hostname.slice(1, -1);
    return ipaddr.IPv6.parse(hex);
  } catch {
    return undefined;
  }
}

/** ::/96 other than :: and ::1. */
function isIpv4Compatible(v6: ipaddr.IPv6): boolean {
  const p = v6.parts;
  return p.slice(0, 6).every((x) => x === 0) && (p[6] !== 0 || p[7] > 1);
}

const ipv4Of = (hi: number, lo: number): ipaddr.IPv4 => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);

function embeddedIpv4(v6: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const p = v6.parts;
  const zeros = (from: number, to: number) => p.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && p[5] === 0xffff) return ipv4Of(p[6], p[7]); // ::ffff:0:0/96 mapped
  if (zeros(0, 4) && p[4] === 0xffff && p[5] === 0) return ipv4Of(p[6], p[7]); // ::ffff:0:0:0/96 translated
  if (p[0] === 0x64 && p[1] === 0xff9b && zeros(2, 6)) return ipv4Of(p[6], p[7]); // 64:ff9b::/96 NAT64
  if (p[0] === 0x2002) return ipv4Of(p[1], p[2]); // 2002::/16 6to4
  return undefined;
}
