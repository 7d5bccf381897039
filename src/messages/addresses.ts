/**
 * Address and header-value checks of the accept path. Addresses are parsed
 * with nodemailer's addressparser (the same parser that later writes them into
 * headers), except the two plain forms it is known to return unchanged, which
 * skip it for speed; then they are held to a sane shape: an ASCII dot-atom
 * local part and a domain of valid labels. IDN domains are accepted and stored
 * as punycode.
 * Any CR or LF in a value that ends up in a header is refused outright, so no
 * input can add a header line.
 */
import { domainToASCII } from 'node:url';
import addressparser from 'nodemailer/lib/addressparser';
import { unprocessable } from '../http/errors';
import { LruMap } from '../util/lru';

export interface Address {
  /** local@domain with the domain lower-case punycode */
  email: string;
  name: string | null;
  domain: string;
}

/** What the API accepts for one address: "Name <a@b>", "a@b" or {email, name}. */
export type AddressInput = string | { email: string; name?: string };

const LINE_BREAK = /[\r\n]/;
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;
const ATOM = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+$/;
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
/**
 * The two forms nearly every send uses, `user@example.com` and
 * `Name <user@example.com>` with a plain name, for which addressparser is known
 * to return the same address and name (the tests compare both paths). They skip
 * the general parser, which is a measurable share of the accept path's CPU.
 */
const PLAIN_ADDRESS = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+@[A-Za-z0-9.-]+";
const PLAIN = new RegExp(`^${PLAIN_ADDRESS}$`);
const PLAIN_NAMED = new RegExp(`^([A-Za-z0-9]+(?: [A-Za-z0-9]+)*) ?<(${PLAIN_ADDRESS})>$`);
/** Recently normalised domains (null: refused); a send names few distinct ones, and domainToASCII is not free. */
const domainCache = new LruMap<string, string | null>(1000);

/** How many domains the cache holds now (for the test of its bound). */
export const domainCacheSize = (): number => domainCache.size;

/** Refuses CR/LF (header injection) and other control characters in a header-bound value. */
export function checkHeaderValue(value: string, param: string): void {
  if (LINE_BREAK.test(value)) throw unprocessable('header_injection', 'line breaks (CR or LF) are not allowed in this value', param);
  if (CONTROL.test(value)) throw unprocessable('invalid_characters', 'control characters are not allowed in this value', param);
}

function invalid(param: string, why: string): never {
  throw unprocessable('invalid_address', why, param);
}

/** Lower-case punycode form of a domain, or undefined when it is not a usable host name. */
export function normalizeDomain(domain: string): string | undefined {
  if (!domain || domain.length > 253 || domain.startsWith('[')) return undefined;
  const cached = domainCache.get(domain);
  if (cached !== undefined) return cached ?? undefined;
  const ascii = toDomain(domain);
  domainCache.set(domain, ascii ?? null);
  return ascii;
}

function toDomain(domain: string): string | undefined {
  const ascii = domainToASCII(domain.toLowerCase());
  if (!ascii || ascii.length > 253) return undefined;
  const labels = ascii.split('.');
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l))) return undefined;
  if (/^[0-9]+$/.test(labels[labels.length - 1])) return undefined; // an IP address, not a domain
  return ascii;
}

function checkLocalPart(local: string, param: string): void {
  if (!local || local.length > 64) invalid(param, 'the local part must be 1 to 64 characters');
  if (!local.split('.').every((atom) => ATOM.test(atom))) {
    invalid(param, 'the local part may hold only ASCII letters, digits, dots and !#$%&\'*+/=?^_`{|}~- (no leading, trailing or double dot)');
  }
}

/** Validates a bare address and returns it with its domain normalised. */
export function parseEmail(raw: string, param: string): Pick<Address, 'email' | 'domain'> {
  const value = raw.trim();
  checkHeaderValue(value, param);
  const at = value.lastIndexOf('@');
  if (at <= 0 || at === value.length - 1) invalid(param, `'${value}' is not an email address`);
  const local = value.slice(0, at);
  checkLocalPart(local, param);
  const domain = normalizeDomain(value.slice(at + 1));
  if (!domain) invalid(param, `'${value.slice(at + 1)}' is not a valid domain`);
  return { email: `${local}@${domain}`, domain };
}

/** Parses one address in any accepted form; `param` names it in errors (e.g. `to[3]`). */
export function parseAddress(input: AddressInput, param: string): Address {
  if (typeof input !== 'string') {
    const emailParam = `${param}.email`;
    const { email, domain } = parseEmail(input.email, emailParam);
    const name = input.name?.trim() || null;
    if (name !== null) checkHeaderValue(name, `${param}.name`);
    return { email, name, domain };
  }
  checkHeaderValue(input, param);
  const one = splitPlain(input) ?? splitWithParser(input, param);
  const { email, domain } = parseEmail(one.address, param);
  return { email, name: one.name, domain };
}

/** The address and display name of a plain form, or undefined for anything else. */
export function splitPlain(input: string): { address: string; name: string | null } | undefined {
  if (PLAIN.test(input)) return { address: input, name: null };
  const named = PLAIN_NAMED.exec(input);
  return named ? { address: named[2], name: named[1] } : undefined;
}

/** The general path: nodemailer's addressparser, held to exactly one address. */
export function splitWithParser(input: string, param: string): { address: string; name: string | null } {
  if (input.includes('<') && !/<[^<>]*>\s*$/.test(input)) invalid(param, `'${input}' is not a valid address: expected "Name <user@example.com>"`);
  const parsed = addressparser(input);
  if (parsed.length !== 1 || 'group' in parsed[0]) invalid(param, 'expected exactly one address');
  const one = parsed[0] as addressparser.Address;
  if (!one.address) invalid(param, `'${input}' holds no email address`);
  return { address: one.address, name: one.name?.trim() || null };
}

/** The header form used in To/Cc/Reply-To and in the message record. */
export function formatAddress(a: Pick<Address, 'email' | 'name'>): { address: string; name: string } {
  return { address: a.email, name: a.name ?? '' };
}
