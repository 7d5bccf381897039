/**
 * Every DNS lookup of the appliance goes through here, so `dns.servers`
 * (e.g. "127.0.0.1:5353" in tests) applies to MX resolution, domain
 * verification and SPF alike. Failures come back as typed values: NXDOMAIN
 * and "no such record" are answers; SERVFAIL and timeouts are temporary.
 */
import { promises as dns } from 'node:dns';
import type { Config } from '../config';

export type DnsFailure = 'nxdomain' | 'nodata' | 'temporary';

export class DnsError extends Error {
  constructor(
    readonly kind: DnsFailure,
    readonly code: string,
    readonly hostname: string,
  ) {
    super(`${code} ${hostname}`);
  }
}

export interface MxRecord {
  exchange: string;
  priority: number;
}

export interface DnsResolver {
  mx(name: string): Promise<MxRecord[]>;
  a(name: string): Promise<string[]>;
  aaaa(name: string): Promise<string[]>;
  txt(name: string): Promise<string[][]>;
  ptr(address: string): Promise<string[]>;
  /** mailauth's resolver signature: (name, rrtype) → records, throwing node-style errors. */
  forMailauth: (name: string, rrtype: string) => Promise<unknown>;
}

function classify(err: unknown, hostname: string): DnsError {
  const code = (err as NodeJS.ErrnoException).code ?? 'EUNKNOWN';
  if (code === 'ENOTFOUND') return new DnsError('nxdomain', code, hostname);
  if (code === 'ENODATA') return new DnsError('nodata', code, hostname);
  return new DnsError('temporary', code, hostname);
}

export function createResolver(config: Pick<Config, 'dns'>): DnsResolver {
  const resolver = new dns.Resolver({ timeout: config.dns.timeoutMs, tries: 2 });
  if (config.dns.servers.length) resolver.setServers(config.dns.servers);
  const wrap = <T>(name: string, fn: () => Promise<T>): Promise<T> => fn().catch((err) => Promise.reject(classify(err, name)));
  return {
    mx: (name) => wrap(name, () => resolver.resolveMx(name)),
    a: (name) => wrap(name, () => resolver.resolve4(name)),
    aaaa: (name) => wrap(name, () => resolver.resolve6(name)),
    txt: (name) => wrap(name, () => resolver.resolveTxt(name)),
    ptr: (address) => wrap(address, () => resolver.reverse(address)),
    forMailauth: (name, rrtype) => resolver.resolve(name, rrtype) as Promise<unknown>,
  };
}
