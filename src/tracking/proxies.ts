/**
 * Who fetched the pixel: a person's mail client, or a known proxy. The list is
 * data (proxies.json) so it can grow without code changes; an entry matches on
 * user agent, on client address, or both.
 */
import { isAllowed } from '../auth/allowlist';
import data from './proxies.json';

interface ProxyEntry {
  name: string;
  prefetch: boolean;
  userAgent?: RegExp;
  cidrs?: string[];
}

const PROXIES: ProxyEntry[] = data.proxies.map((p) => ({
  name: p.name,
  prefetch: p.prefetch,
  userAgent: 'userAgent' in p && p.userAgent ? new RegExp(p.userAgent, 'i') : undefined,
  cidrs: 'cidrs' in p ? p.cidrs : undefined,
}));

/** The matching proxy entry, if any. */
export function knownProxy(userAgent: string | null, clientIp: string): { name: string; prefetch: boolean } | undefined {
  return PROXIES.find((p) => {
    if (p.userAgent && !p.userAgent.test(userAgent ?? '')) return false;
    if (p.cidrs && !isAllowed(p.cidrs, clientIp)) return false;
    return Boolean(p.userAgent || p.cidrs);
  });
}

/** True when the fetch was made by a machine that loads images without the recipient opening the mail. */
export const isPrefetch = (userAgent: string | null, clientIp: string): boolean => knownProxy(userAgent, clientIp)?.prefetch ?? false;
