/**
 * Resolve step of the pipeline: where does mail for a domain go? Answers come
 * from the configured resolver (`dns.servers`) as values, never exceptions:
 *
 * - MX hosts in preference order, shuffled among equal preferences;
 * - no MX records → the domain itself (A/AAAA fallback, RFC 5321 §5.1);
 * - a null MX (RFC 7505), NXDOMAIN, or no MX and no address → hard bounce;
 * - SERVFAIL or timeout → deferral.
 *
 * Node's resolver does not expose MX TTLs, so positive answers are reused for a
 * fixed `delivery.mxCacheSeconds` (60 s by default). Failures are never cached,
 * and concurrent lookups of one name share a single query.
 */
import type { Clock } from '../clock';
import type { Config } from '../config';
import { createResolver, DnsError, DnsResolver } from '../dns/resolver';

export interface MxHost {
  name: string;
  priority: number;
  /** true for the A/AAAA fallback: the domain itself, no MX */
  implicit: boolean;
}

export type MxResult =
  | { kind: 'hosts'; hosts: MxHost[] }
  | { kind: 'bounce'; code: number; enhancedCode: string; diagnostic: string }
  | { kind: 'defer'; diagnostic: string };

export type AddressFamily = 4 | 6;

export type AddressResult = { kind: 'addresses'; addresses: string[] } | { kind: 'none'; temporary: boolean; diagnostic: string };

export interface MxResolver {
  resolve(domain: string): Promise<MxResult>;
  /** Addresses of one MX host in the family of the source address. */
  addresses(host: string, family: AddressFamily): Promise<AddressResult>;
}

export function createMxResolver(config: Pick<Config, 'dns' | 'delivery'>, clock: Clock, random: () => number = Math.random): MxResolver {
  const dns = createResolver(config);
  const cacheMs = config.delivery.mxCacheSeconds * 1000;
  const mxCache = new TtlCache<MxResult>(cacheMs, clock);
  const addressCache = new TtlCache<AddressResult>(cacheMs, clock);
  return {
    resolve: (domain) => {
      const name = domain.toLowerCase().replace(/\.$/, '');
      return mxCache.get(name, () => lookupMx(dns, name, random), (r) => r.kind === 'hosts');
    },
    addresses: (host, family) =>
      addressCache.get(`${family} ${host}`, () => lookupAddresses(dns, host, family), (r) => r.kind === 'addresses'),
  };
}

async function lookupMx(dns: DnsResolver, domain: string, random: () => number): Promise<MxResult> {
  let records;
  try {
    records = await dns.mx(domain);
  } catch (err) {
    if (!(err instanceof DnsError)) throw err;
    if (err.kind === 'nxdomain') return { kind: 'bounce', code: 550, enhancedCode: '5.1.2', diagnostic: `DNS: domain ${domain} does not exist (NXDOMAIN)` };
    if (err.kind === 'nodata') return fallbackToDomain(dns, domain);
    return { kind: 'defer', diagnostic: `DNS: MX lookup for ${domain} failed temporarily (${err.code})` };
  }
  if (records.length === 0) return fallbackToDomain(dns, domain);
  if (records.some((r) => r.exchange === '' || r.exchange === '.')) {
    return { kind: 'bounce', code: 556, enhancedCode: '5.1.10', diagnostic: `DNS: ${domain} publishes a null MX and accepts no mail (RFC 7505)` };
  }
  const hosts = records.map((r) => ({ name: r.exchange.toLowerCase().replace(/\.$/, ''), priority: r.priority, implicit: false, order: random() }));
  hosts.sort((a, b) => a.priority - b.priority || a.order - b.order);
  return { kind: 'hosts', hosts: hosts.map(({ name, priority, implicit }) => ({ name, priority, implicit })) };
}

/** No MX: the domain is its own mail host if it has an address (RFC 5321 §5.1). */
async function fallbackToDomain(dns: DnsResolver, domain: string): Promise<MxResult> {
  const results = await Promise.all([lookupAddresses(dns, domain, 4), lookupAddresses(dns, domain, 6)]);
  if (results.some((r) => r.kind === 'addresses')) return { kind: 'hosts', hosts: [{ name: domain, priority: 0, implicit: true }] };
  const temporary = results.find((r) => r.kind === 'none' && r.temporary);
  if (temporary?.kind === 'none') return { kind: 'defer', diagnostic: temporary.diagnostic };
  return { kind: 'bounce', code: 550, enhancedCode: '5.1.2', diagnostic: `DNS: ${domain} has no MX and no address records` };
}

async function lookupAddresses(dns: DnsResolver, host: string, family: AddressFamily): Promise<AddressResult> {
  try {
    const addresses = family === 4 ? await dns.a(host) : await dns.aaaa(host);
    return addresses.length ? { kind: 'addresses', addresses } : { kind: 'none', temporary: false, diagnostic: `DNS: ${host} has no IPv${family} address` };
  } catch (err) {
    if (!(err instanceof DnsError)) throw err;
    if (err.kind === 'temporary') return { kind: 'none', temporary: true, diagnostic: `DNS: address lookup for ${host} failed temporarily (${err.code})` };
    return { kind: 'none', temporary: false, diagnostic: `DNS: ${host} has no IPv${family} address (${err.code})` };
  }
}

/** A small cache of answers that also merges concurrent lookups of one key. */
class TtlCache<T> {
  // Keyed by recipient domain or MX host (customer input): cleared at 10,000 entries.
  private readonly entries = new Map<string, { value: T; expires: number }>();
  // Bounded by the lookups in flight (delivery.concurrency); each removes itself when settled.
  private readonly pending = new Map<string, Promise<T>>();

  constructor(
    private readonly ttlMs: number,
    private readonly clock: Clock,
  ) {}

  get(key: string, load: () => Promise<T>, cacheable: (value: T) => boolean): Promise<T> {
    const hit = this.entries.get(key);
    if (hit && hit.expires > this.clock.now()) return Promise.resolve(hit.value);
    const running = this.pending.get(key);
    if (running) return running;
    const promise = load().then(
      (value) => {
        this.pending.delete(key);
        if (this.ttlMs > 0 && cacheable(value)) this.entries.set(key, { value, expires: this.clock.now() + this.ttlMs });
        if (this.entries.size > 10_000) this.entries.clear(); // bound memory under a flood of distinct domains
        return value;
      },
      (err) => {
        this.pending.delete(key);
        throw err;
      },
    );
    this.pending.set(key, promise);
    return promise;
  }
}
