/**
 * Domain names as Pigeon stores them: trimmed, lower-case, IDN in punycode
 * (A-labels), no trailing dot. Anything that is not a plain host name — IP
 * literals, wildcards, underscores, empty labels, a single label — is refused,
 * so every lookup and every record we print names exactly one DNS name.
 */
import net from 'node:net';
import { domainToASCII } from 'node:url';
import { LruMap } from '../util/lru';

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const MAX_NAME = 253;

export type NameResult = { ok: true; name: string } | { ok: false; reason: string };

export function normalizeDomainName(input: string): NameResult {
  let name = input.trim();
  if (!name) return { ok: false, reason: 'is empty' };
  if (name.startsWith('[') || net.isIP(name)) return { ok: false, reason: 'is an IP address, not a domain name' };
  // One trailing dot is the fully-qualified spelling of the same name; two are not a name.
  if (name.endsWith('.')) name = name.slice(0, -1);
  if (name.endsWith('.') || name.startsWith('.')) return { ok: false, reason: 'has an empty label' };
  // domainToASCII lower-cases, maps IDN to punycode, and turns numeric hosts like 127.1 into IPv4.
  const ascii = domainToASCII(name);
  if (!ascii) return { ok: false, reason: 'is not a valid host name' };
  if (net.isIP(ascii)) return { ok: false, reason: 'is an IP address, not a domain name' };
  if (ascii.length > MAX_NAME) return { ok: false, reason: `is longer than ${MAX_NAME} characters` };
  const labels = ascii.split('.');
  if (labels.length < 2) return { ok: false, reason: 'needs at least two labels (like example.com)' };
  const bad = labels.find((l) => !LABEL.test(l));
  if (bad !== undefined) {
    return { ok: false, reason: `has an invalid label '${bad}' (1-63 of a-z, 0-9 and '-', not starting or ending with '-')` };
  }
  if (/^\d+$/.test(labels[labels.length - 1])) return { ok: false, reason: 'ends in a numeric label' };
  return { ok: true, name: ascii };
}

/**
 * Names looked up lately: every send asks for its From domain, and domainToASCII costs it several µs. Bounded,
 * as the input is any caller's: 1,000 inputs of at most REMEMBERED_INPUT characters (a longer one, padding
 * around a name, is normalised each time).
 */
const lookedUp = new LruMap<string, string | null>(1000);
const REMEMBERED_INPUT = 2 * MAX_NAME;
export const lookedUpNames = (): number => lookedUp.size;
/** Whether `input`'s answer is kept (tests). */
export const isRememberedName = (input: string): boolean => lookedUp.peek(input) !== undefined;

/** For lookups by a name from a URL path or the CLI: the normalised name, or null if it cannot be one. */
export function lookupName(input: string): string | null {
  const known = lookedUp.get(input);
  if (known !== undefined) return known;
  const result = normalizeDomainName(input);
  const name = result.ok ? result.name : null;
  if (input.length <= REMEMBERED_INPUT) lookedUp.set(input, name);
  return name;
}
