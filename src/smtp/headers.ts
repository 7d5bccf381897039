/**
 * The header block of a message as received: split into fields (folding
 * kept), read, and joined back with some fields removed. The header bytes are
 * handled as latin1 so that 8-bit bytes survive unchanged; values are read
 * as UTF-8 (RFC 6532) when asked for. The body is never touched.
 */

export interface HeaderField {
  /** lower-case field name */
  name: string;
  /** the field's lines as received, folding included, without the final CRLF (latin1) */
  text: string;
}

export interface SplitMessage {
  fields: HeaderField[];
  body: Buffer;
  /** a line in the header block that is neither a field nor a continuation */
  malformed: boolean;
}

const FIELD_NAME = /^[\x21-\x39\x3b-\x7e]+$/;

/** Splits at the first empty line; a message without one is all header. */
export function splitMessage(raw: Buffer): SplitMessage {
  const end = raw.indexOf('\r\n\r\n');
  const startsEmpty = raw.subarray(0, 2).toString('latin1') === '\r\n';
  const headerText = startsEmpty ? '' : raw.subarray(0, end < 0 ? raw.length : end).toString('latin1');
  const body = startsEmpty ? raw.subarray(2) : end < 0 ? Buffer.alloc(0) : raw.subarray(end + 4);
  const fields: HeaderField[] = [];
  let malformed = false;
  for (const line of headerText.split('\r\n')) {
    if (!line) continue;
    if (/^[ \t]/.test(line)) {
      if (fields.length) fields[fields.length - 1].text += `\r\n${line}`;
      else malformed = true;
      continue;
    }
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon).trimEnd() : '';
    if (!FIELD_NAME.test(name)) {
      malformed = true;
      continue;
    }
    fields.push({ name: name.toLowerCase(), text: line });
  }
  return { fields, body, malformed };
}

/** The unfolded value, decoded as UTF-8. */
export function fieldValue(field: HeaderField): string {
  const raw = field.text.slice(field.text.indexOf(':') + 1).replace(/\r\n(?=[ \t])/g, '');
  return Buffer.from(raw, 'latin1').toString('utf8').trim();
}

/** The display form of a field name as received, e.g. "X-Pigeon-Tags". */
export const fieldName = (field: HeaderField): string => field.text.slice(0, field.text.indexOf(':')).trimEnd();

export function joinMessage(fields: HeaderField[], body: Buffer): Buffer {
  const header = fields.map((f) => `${f.text}\r\n`).join('');
  return Buffer.concat([Buffer.from(`${header}\r\n`, 'latin1'), body]);
}

const ENCODED_WORD = /=\?([^?\s]+)\?([bBqQ])\?([^?\s]*)\?=/g;

/**
 * Decodes RFC 2047 encoded-words ("=?UTF-8?Q?=7B=22a=22=7D?="), which mail
 * libraries use for header values with special characters: nodemailer, for
 * one, encodes a JSON value that way. Whitespace between adjacent
 * encoded-words is dropped, as the RFC says; an unknown charset is left as is.
 */
export function decodeEncodedWords(value: string): string {
  return value.replace(/(=\?[^?\s]+\?[bBqQ]\?[^?\s]*\?=)\s+(?==\?[^?\s]+\?[bBqQ]\?[^?\s]*\?=)/g, '$1').replace(ENCODED_WORD, (word, charset: string, encoding: string, text: string) => {
    const bytes = encoding.toUpperCase() === 'B'
      ? Buffer.from(text, 'base64')
      : Buffer.from(text.replace(/_/g, ' ').replace(/=([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1');
    try {
      return new TextDecoder(charset.split('*')[0].toLowerCase()).decode(bytes);
    } catch {
      return word;
    }
  });
}
