/**
 * Address validation for the suppression list: the addresses mail is really
 * sent to (RFC 5321 mailbox, dot-atom local part, DNS host name), not every
 * form RFC 5322 allows. Quoted local parts, comments, display names and
 * address literals are refused with a reason; internationalised domains are
 * accepted and stored in ASCII (punycode) form.
 */
import { domainToASCII } from 'node:url';

const LOCAL = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~\u0080-\uffff-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~\u0080-\uffff-]+)*$/;
const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export type EmailCheck = { ok: true; email: string } | { ok: false; error: string };

/** The ASCII form of a domain, or '' when it is not a valid host name. */
export function asciiDomain(domain: string): string {
  const ascii = /^[\x00-\x7f]*$/.test(domain) ? domain.toLowerCase() : domainToASCII(domain);
  if (!ascii || ascii.length > 253) return '';
  const labels = ascii.split('.');
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l)) || /^\d+$/.test(labels[labels.length - 1])) return '';
  return ascii;
}

/** Checks one address; on success `email` is its normalised form (lower case, ASCII domain). */
export function checkEmail(input: string): EmailCheck {
  const value = input.trim();
  if (!value) return { ok: false, error: 'empty' };
  if (value.length > 254) return { ok: false, error: 'longer than 254 characters' };
  if (/[\s<>()[\]\\,;:"\x00-\x1f\x7f]/.test(value.replace(/@(?=[^@]*$)/, ''))) {
    return { ok: false, error: 'contains spaces, quotes or other characters an address cannot have' };
  }
  const at = value.lastIndexOf('@');
  if (at < 0) return { ok: false, error: 'missing @' };
  const local = value.slice(0, at);
  const domain = value.slice(at + 1);
  if (!local) return { ok: false, error: 'missing the part before @' };
  if (local.length > 64) return { ok: false, error: 'the part before @ is longer than 64 characters' };
  if (!LOCAL.test(local)) return { ok: false, error: 'the part before @ is not valid (dots at the ends or doubled, or a second @)' };
  if (!domain) return { ok: false, error: 'missing the domain' };
  const ascii = asciiDomain(domain);
  if (!ascii) return { ok: false, error: `'${domain}' is not a valid domain name` };
  return { ok: true, email: `${local.toLowerCase()}@${ascii}` };
}
