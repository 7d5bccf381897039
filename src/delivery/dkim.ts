/**
 * DKIM signing (RFC 6376, relaxed/relaxed; RFC 8463 for Ed25519). The
 * signature covers the prepared bytes (after tracking rewrote them), is made
 * once per content before the first attempt, and the signed bytes are what is
 * stored and retried. The DKIM-Signature header lines are prepended.
 *
 * Canonicalisation and body hash are computed here (dkim-canon.ts) and the
 * signature made with node:crypto directly: mailauth's signer streams the
 * message through its MIME parser first, which cost more than the RSA
 * signature itself (`npm run bench dkim` measures both). Tests verify every
 * signature with mailauth's verifier.
 *
 * A domain may have, besides its key, an Ed25519 key for a second signature:
 * the message then carries two DKIM-Signature headers (Ed25519 on top, then
 * the domain's key); receivers that do not know Ed25519 ignore that one.
 */
import crypto, { type KeyObject } from 'node:crypto';
import { bodyHash, fieldsToSign, headerEnd, relaxedHeader, splitMessage } from './dkim-canon';

/** The active key(s) of the From domain, as the domains module hands them over. */
export interface SigningKey {
  domain: string;
  selector: string;
  algorithm: 'rsa' | 'ed25519';
  privateKeyPem: string;
  /** The domain's optional second key, once its record verified: an extra Ed25519 signature. */
  ed25519?: { selector: string; privateKeyPem: string };
}

/** (account, From domain) → its active signing key, or null when it has none. */
export type SigningKeyLookup = (accountId: string, fromDomain: string) => Promise<SigningKey | null>;

export const noSigningKeys: SigningKeyLookup = async () => null;

/**
 * The fields signed: mailauth's default list plus List-Unsubscribe-Post
 * (RFC 8058 wants both one-click headers under the signature).
 */
const tools = require('mailauth/lib/tools') as { defaultDKIMFieldNames: string };
const SIGNED_FIELDS = `${tools.defaultDKIMFieldNames}:List-Unsubscribe-Post`.split(':');

/*
 * Parsing a PEM key costs about as much as an RSA signature, so each key is
 * parsed once per thread. Keyed by PEM of our own domains' keys; cleared at 1,000.
 */
const parsedKeys = new Map<string, KeyObject>();
function privateKey(pem: string): KeyObject {
  let key = parsedKeys.get(pem);
  if (!key) {
    if (parsedKeys.size >= 1000) parsedKeys.clear();
    parsedKeys.set(pem, (key = crypto.createPrivateKey(pem)));
  }
  return key;
}

export type SignResult = { raw: Buffer; note: string } | { error: string };

/** The DKIM-Signature lines for raw (to prepend), or why none could be made. */
export type Signatures = { headers: string; note: string } | { error: string };

interface OneKey {
  domain: string;
  selector: string;
  algorithm: 'rsa' | 'ed25519';
  privateKeyPem: string;
}

/** Signs raw with the key (and its Ed25519 companion, if any); relaxed/relaxed survives the usual relay rewrapping. */
export async function signMessage(raw: Buffer, key: SigningKey, now: number): Promise<SignResult> {
  return withSignatures(raw, makeSignatures(raw, key, now));
}

export function withSignatures(raw: Buffer, made: Signatures): SignResult {
  return 'error' in made ? made : { raw: Buffer.concat([Buffer.from(made.headers, 'latin1'), withHeaderEnd(raw)]), note: made.note };
}

/**
 * A message that is all header fields (raw MIME relayed over SMTP can be) gets the blank line that ends its
 * header section: without it a verifier cannot tell where the signed fields end, and reports no signature. The
 * body stays empty, so the body hash signed for it holds.
 */
function withHeaderEnd(raw: Buffer): Buffer {
  if (headerEnd(raw)) return raw;
  return Buffer.concat([raw, Buffer.from(raw[raw.length - 1] === 0x0a ? '\r\n' : '\r\n\r\n', 'latin1')]);
}

/** What the signing threads compute: only the header lines cross back, not the message. */
export function makeSignatures(raw: Buffer, key: SigningKey, now: number): Signatures {
  const second: OneKey | undefined = key.ed25519 && { domain: key.domain, algorithm: 'ed25519', ...key.ed25519 };
  const keys: OneKey[] = second ? [second, key] : [key];
  try {
    const { headers, body } = splitMessage(raw);
    const signed = fieldsToSign(headers, SIGNED_FIELDS);
    const bh = bodyHash(body);
    const lines = keys.map((k) => signatureHeader(k, signed, bh, Math.floor(now / 1000)));
    // "d=example.com s=pg… a=rsa-sha256", then ", s=pg… a=ed25519-sha256" for a second signature.
    const note = [`d=${key.domain} s=${key.selector} a=${algorithmTag(key)}`, ...(second ? [`s=${second.selector} a=ed25519-sha256`] : [])].join(', ');
    return { headers: lines.join(''), note };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

const algorithmTag = (k: OneKey) => (k.algorithm === 'ed25519' ? 'ed25519-sha256' : 'rsa-sha256');

/**
 * One `DKIM-Signature:` field, CRLF-terminated and folded. The data signed is
 * the relaxed form of each signed field, then of this field with b= empty and
 * no final CRLF (§3.7); RFC 8463 signs the SHA-256 of that data with Ed25519.
 */
function signatureHeader(k: OneKey, fields: Array<{ name: string; text: string }>, bh: string, t: number): string {
  const h = fold(fields.map((f) => f.name), ':');
  // Tags in mailauth's order (h= before bh=), which simple parsers of h= rely on.
  const unsigned = `DKIM-Signature: v=1; a=${algorithmTag(k)}; c=relaxed/relaxed; d=${k.domain};\r\n s=${k.selector}; q=dns/txt; t=${t};\r\n h=${h};\r\n bh=${bh};\r\n b=`;
  const data = Buffer.from([...fields.map((f) => `${relaxedHeader(f.text)}\r\n`), relaxedHeader(unsigned)].join(''), 'latin1');
  const pk = privateKey(k.privateKeyPem);
  const b =
    k.algorithm === 'ed25519'
      ? crypto.sign(null, crypto.createHash('sha256').update(data).digest(), pk)
      : crypto.sign('sha256', data, pk);
  return `${unsigned}${b.toString('base64').match(/.{1,72}/g)!.join('\r\n ')}\r\n`;
}

/** Joins items with sep, folding (CRLF SP after a separator) so no line grows past ~72 characters. */
function fold(items: string[], sep: string): string {
  let out = '';
  let line = 0;
  for (const [i, item] of items.entries()) {
    const piece = i ? sep + item : item;
    if (line + piece.length > 72 && i) {
      out += `${sep}\r\n ${item}`;
      line = item.length + 1;
    } else {
      out += piece;
      line += piece.length;
    }
  }
  return out;
}

/**
 * Remembers each (account, domain)'s key for `ttlMs`: the lookup opens a
 * sealed key (a query, a key derivation and a decryption), which per message
 * would cost more than the signature. A rotated key is picked up within ttlMs.
 */
export function cachedSigningKeys(lookup: () => SigningKeyLookup, now: () => number, ttlMs = 60_000): SigningKeyLookup {
  // Keyed by sending domain id; cleared at 10,000, entries expire after ttlMs.
  const cache = new Map<string, { key: Promise<SigningKey | null>; expires: number }>();
  return (accountId, domain) => {
    const id = `${accountId} ${domain}`;
    const hit = cache.get(id);
    if (hit && hit.expires > now()) return hit.key;
    const key = lookup()(accountId, domain);
    cache.set(id, { key, expires: now() + ttlMs });
    key.catch(() => cache.delete(id)); // a failed lookup is asked again next time
    if (cache.size > 10_000) cache.clear();
    return key;
  };
}
