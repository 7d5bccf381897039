/**
 * DKIM relaxed/relaxed canonicalisation (RFC 6376 §3.4.2 and §3.4.4), done on
 * the whole message at once. mailauth streams the message through a
 * MIME-aware parser before it hashes anything; for the few kilobytes of a
 * transactional message that parse costs more than the hash, and the rules
 * themselves are a handful of substitutions.
 *
 * The message is handled as a latin1 string, so every byte maps to one
 * character and 8-bit content is hashed exactly as it was given.
 */
import crypto from 'node:crypto';

/** One header field as it stands in the message: name as written, and the whole field text (folds included). */
export interface HeaderField {
  name: string;
  text: string;
}

export interface SplitMessage {
  headers: HeaderField[];
  /** Everything after the blank line that ends the header section (latin1). */
  body: string;
}

/** Header fields (continuation lines joined to their field) and the body. Bare LF counts as a line end, as SMTP transmission makes it CRLF. */
export function splitMessage(raw: Buffer): SplitMessage {
  const text = raw.toString('latin1');
  // A message that starts with the blank line has no header fields at all.
  if (/^\r?\n/.test(text)) return { headers: [], body: text.replace(/^\r?\n/, '') };
  const end = /\r?\n\r?\n/.exec(text);
  const head = end ? text.slice(0, end.index) : text;
  const body = end ? text.slice(end.index + end[0].length) : '';
  const headers: HeaderField[] = [];
  for (const line of head.split(/\r?\n/)) {
    const last = headers[headers.length - 1];
    if (last && (line.startsWith(' ') || line.startsWith('\t'))) last.text += `\r\n${line}`;
    else {
      const colon = line.indexOf(':');
      headers.push({ name: (colon < 0 ? line : line.slice(0, colon)).trim(), text: line });
    }
  }
  return { headers, body };
}

/** §3.4.2: lower-case name, unfolded value, runs of WSP as one SP, no WSP around the colon or at the end. */
export function relaxedHeader(field: string): string {
  const colon = field.indexOf(':');
  const name = field.slice(0, colon).trim().toLowerCase();
  const value = field
    .slice(colon + 1)
    .replace(/\r?\n/g, '')
    .replace(/[ \t]+/g, ' ')
    .trim();
  return `${name}:${value}`;
}

/**
 * §3.4.4: runs of WSP as one SP, no WSP at line ends, no empty lines at the
 * end, and a non-empty body ends with CRLF (an empty one stays empty).
 */
export function relaxedBody(body: string): string {
  const lines = body
    .replace(/[ \t]+/g, ' ')
    .replace(/ (?=\r?\n|$)/g, '')
    .replace(/\r?\n/g, '\r\n')
    .replace(/(?:\r\n)+$/, '');
  return lines.length ? `${lines}\r\n` : '';
}

/** bh=: base64 SHA-256 of the relaxed body. */
export function bodyHash(body: string): string {
  return crypto.createHash('sha256').update(relaxedBody(body), 'latin1').digest('base64');
}

/**
 * The fields to sign, bottom-up, every instance of every listed name (as
 * mailauth signs): a verifier takes instances of a name from the bottom, so
 * listing each one in h= makes it find them in the same order.
 */
export function fieldsToSign(headers: HeaderField[], names: readonly string[]): HeaderField[] {
  const wanted = new Set(names.map((n) => n.toLowerCase()));
  const out: HeaderField[] = [];
  for (let i = headers.length - 1; i >= 0; i--) if (wanted.has(headers[i].name.toLowerCase())) out.push(headers[i]);
  return out;
}
