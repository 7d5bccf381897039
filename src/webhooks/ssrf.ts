/**
 * The SSRF guard. A webhook URL is a request the appliance makes on a
 * customer's behalf from inside the operator's network, so it must not reach
 * loopback, private, link-local, CGNAT, multicast or reserved addresses (cloud
 * metadata at 169.254.169.254, the admin panel on 10.0.0.1, the appliance's own
 * API), nor IPv6 forms that embed one (net/address-class.ts, shared with the MTA). The check runs when a URL is saved and again before every attempt, and
 * the connection goes to the very address that was checked (see sender.ts), so
 * a DNS answer that changes between check and connect (rebinding) cannot slip
 * a private address in.
 *
 * Resolution: with `dns.servers` set we ask those servers (A and AAAA), as
 * every other lookup of the appliance does. With it empty we use the operating
 * system's lookup (getaddrinfo): that is what any HTTP client on this host
 * would connect to, /etc/hosts included, so a name the operator mapped to an
 * internal address there is seen — and refused — as internal. Either way the
 * result is pinned, so guard and connection can never disagree.
 */
import { promises as dnsPromises } from 'node:dns';
import net from 'node:net';
import type { Config } from '../config';
import { createResolver, DnsError } from '../dns/resolver';
import { describeAddress, isPublicAddress } from '../net/address-class';

export interface TargetCheck {
  ok: true;
  url: URL;
  /** host name without IPv6 brackets, as TLS should verify it */
  host: string;
  /** the address to connect to (checked) */
  address: string;
  family: 4 | 6;
}

export interface TargetRefusal {
  ok: false;
  code: 'invalid_url' | 'unresolvable_url' | 'private_target';
  message: string;
}

type GuardConfig = Pick<Config, 'dns' | 'webhooks'>;

export { isPublicAddress };

/** Scheme, credentials and shape of a webhook URL, before any lookup. */
export function checkUrlShape(raw: string, allowHttp: boolean): URL | TargetRefusal {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, code: 'invalid_url', message: 'url is not a valid absolute URL' };
  }
  if (url.protocol !== 'https:' && !(allowHttp && url.protocol === 'http:')) {
    return { ok: false, code: 'invalid_url', message: allowHttp ? 'url must use https or http' : 'url must use https' };
  }
  if (url.username || url.password) {
    return { ok: false, code: 'invalid_url', message: 'url must not contain credentials; requests are authenticated by their signature' };
  }
  if (!url.hostname) return { ok: false, code: 'invalid_url', message: 'url has no host' };
  return url;
}

const unbracket = (hostname: string): string => hostname.replace(/^\[(.*)\]$/, '$1');

/** Resolves a URL's host and decides whether the appliance may connect to it. */
export async function checkTarget(raw: string, config: GuardConfig): Promise<TargetCheck | TargetRefusal> {
  const shaped = checkUrlShape(raw, config.webhooks.allowHttp);
  if (!(shaped instanceof URL)) return shaped;
  const host = unbracket(shaped.hostname);
  let addresses: string[];
  try {
    addresses = net.isIP(host) ? [host] : await resolveHost(host, config);
  } catch (err) {
    const why = err instanceof DnsError ? err.code : (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    return { ok: false, code: 'unresolvable_url', message: `the host ${host} could not be resolved (${why})` };
  }
  if (!addresses.length) return { ok: false, code: 'unresolvable_url', message: `the host ${host} has no address` };
  if (!config.webhooks.allowPrivateTargets) {
    // Any non-public answer refuses the URL: otherwise the receiver could pick which one we use.
    const bad = addresses.find((a) => !isPublicAddress(a));
    if (bad) {
      return { ok: false, code: 'private_target', message: `the host ${host} resolves to ${describeAddress(bad)}; webhooks may only reach public addresses` };
    }
  }
  const address = addresses[0];
  return { ok: true, url: shaped, host, address, family: net.isIPv6(address) ? 6 : 4 };
}

async function resolveHost(host: string, config: GuardConfig): Promise<string[]> {
  if (!config.dns.servers.length) return systemLookup(host, config.dns.timeoutMs * 2);
  const resolver = createResolver(config);
  const settled = await Promise.allSettled([resolver.a(host), resolver.aaaa(host)]);
  const found = settled.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
  if (found.length) return found;
  // Both failed: report the more telling failure (a temporary one over "no AAAA").
  const failures = settled.map((r) => (r as PromiseRejectedResult).reason as DnsError);
  throw failures.find((f) => f.kind !== 'nodata') ?? failures[0];
}

/** getaddrinfo has no timeout of its own; bound it so a stuck resolver cannot hold a slot. */
async function systemLookup(host: string, timeoutMs: number): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error('lookup timed out'), { code: 'ETIMEOUT' })), timeoutMs);
  });
  try {
    const found = await Promise.race([dnsPromises.lookup(host, { all: true, verbatim: true }), timeout]);
    return found.map((f) => f.address);
  } finally {
    clearTimeout(timer);
  }
}
