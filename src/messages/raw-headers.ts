/**
 * Submission fix-ups of a raw message relayed over SMTP, as a message
 * submission agent does (RFC 6409 §8): add Message-ID and Date when missing,
 * drop Bcc so blind recipients stay blind. The body bytes are kept untouched;
 * the header block is handled as latin1 so 8-bit bytes survive unchanged.
 */
import addressparser from 'nodemailer/lib/addressparser';

export interface RawFixResult {
  raw: Buffer;
  /** Without <> */
  messageIdHeader: string;
  /** Lower-cased addresses of the To and Cc headers. */
  shownTo: Set<string>;
  shownCc: Set<string>;
  subject: string | null;
}

interface Field {
  name: string;
  /** The field's lines as received, folding included, without the final CRLF. */
  text: string;
}

function splitHeader(raw: Buffer): { header: string; body: Buffer; newline: string } {
  const crlf = raw.indexOf('\r\n\r\n');
  const lf = raw.indexOf('\n\n');
  if (crlf >= 0 && (lf < 0 || crlf < lf)) return { header: raw.subarray(0, crlf).toString('latin1'), body: raw.subarray(crlf + 4), newline: '\r\n' };
  if (lf >= 0) return { header: raw.subarray(0, lf).toString('latin1'), body: raw.subarray(lf + 2), newline: '\n' };
  return { header: raw.toString('latin1'), body: Buffer.alloc(0), newline: '\r\n' };
}

function parseFields(header: string): Field[] {
  const fields: Field[] = [];
  for (const line of header.split(/\r?\n/)) {
    if (/^[ \t]/.test(line) && fields.length) fields[fields.length - 1].text += `\r\n${line}`;
    else if (line) fields.push({ name: line.slice(0, Math.max(0, line.indexOf(':'))).trim().toLowerCase(), text: line });
  }
  return fields;
}

const valueOf = (f: Field): string => f.text.slice(f.text.indexOf(':') + 1).replace(/\r\n[ \t]/g, ' ').trim();

function addressesOf(fields: Field[], name: string): Set<string> {
  const out = new Set<string>();
  for (const f of fields.filter((x) => x.name === name)) {
    for (const a of addressparser(valueOf(f), { flatten: true })) if (a.address) out.add(a.address.toLowerCase());
  }
  return out;
}

/** `newMessageId` is used (without <>) when the message has no Message-ID. */
export function fixSubmittedMessage(raw: Buffer, newMessageId: string, now: number): RawFixResult {
  const { header, body } = splitHeader(raw);
  const fields = parseFields(header).filter((f) => f.name !== 'bcc');
  const existingId = fields.find((f) => f.name === 'message-id');
  const idValue = existingId ? valueOf(existingId).replace(/^<|>$/g, '') : '';
  const messageIdHeader = idValue || newMessageId;
  const added: string[] = [];
  if (!idValue) added.push(`Message-ID: <${newMessageId}>`);
  if (!fields.some((f) => f.name === 'date')) added.push(`Date: ${new Date(now).toUTCString().replace(/GMT/, '+0000')}`);
  const kept = fields.filter((f) => !(f === existingId && !idValue)).map((f) => f.text);
  const headerText = [...kept, ...added].join('\r\n');
  const subjectField = fields.find((f) => f.name === 'subject');
  return {
    raw: Buffer.concat([Buffer.from(`${headerText}\r\n\r\n`, 'latin1'), body]),
    messageIdHeader,
    shownTo: addressesOf(fields, 'to'),
    shownCc: addressesOf(fields, 'cc'),
    subject: subjectField ? valueOf(subjectField) : null,
  };
}
