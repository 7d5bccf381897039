/**
 * MIME building for the send API: nodemailer's MailComposer turns the
 * rendered parts into RFC 5322 bytes (multipart/alternative for html+text,
 * multipart/related for inline parts, multipart/mixed for attachments), with
 * the Message-ID on our hostname and the Date from the injected clock. File
 * and URL access of the composer are switched off: attachments are bytes only.
 * Bcc never reaches the header block.
 */
import MailComposer from 'nodemailer/lib/mail-composer';
import type Mail from 'nodemailer/lib/mailer';
import type MimeNode from 'nodemailer/lib/mime-node';
import { Address, formatAddress } from './addresses';
import { identifierBytes } from '../ids';
import { installComposerSpeedups } from './composer-speedups';
import { serializeMime } from './mime-serialize';

installComposerSpeedups();

export interface Attachment {
  filename: string;
  content: Buffer;
  contentType?: string;
  contentId?: string;
}

export interface MimeInput {
  from: Address;
  to: Address[];
  cc: Address[];
  replyTo: Address[];
  subject: string;
  html?: string;
  text?: string;
  headers: Array<[string, string]>;
  attachments: Attachment[];
  /** Without <> */
  messageId: string;
  date: number;
}

/**
 * The composer picks quoted-printable or base64 for each text by matching every
 * letter with a regex, which is a large share of its cost on 5 KB bodies. A
 * similar choice from one pass over the char codes: QP while most text is ASCII.
 * An all-ASCII text (most mail) is recognised by its UTF-8 length alone (each character one byte), which
 * Node counts several times faster than a regex scans for a non-ASCII letter.
 */
function textEncoding(...texts: Array<string | undefined>): 'quoted-printable' | 'base64' {
  let ascii = 0;
  let other = 0;
  for (const text of texts) {
    if (!text) continue;
    if (Buffer.byteLength(text) === text.length) {
      ascii += text.length;
      continue;
    }
    for (let i = 0; i < text.length; i++) {
      if (text.charCodeAt(i) < 128) ascii++;
      else other++;
    }
  }
  return other < ascii ? 'quoted-printable' : 'base64';
}

/** A line break in any of its three spellings; a lone CR or LF is not one in a message (RFC 5322 2.3). */
const LINE_BREAK = /\r\n|\r|\n/g;

/**
 * The text with every line break written CRLF. The composer keeps a text's own line breaks in 7bit and
 * quoted-printable parts, so a text with bare LFs (JSON's "\n", what templates render) made a message the wire
 * cannot carry as stored: nodemailer's data stream then copied every message to rewrite them at each delivery
 * attempt, and the DKIM signer had to hash a converted copy of the body instead of its bytes.
 */
export function crlfLines(text: string | undefined): string | undefined {
  if (text === undefined) return text;
  // without a CR every line break is a bare LF: a plain replace, about three times faster than the regex
  return text.includes('\r') ? text.replace(LINE_BREAK, '\r\n') : text.replaceAll('\n', '\r\n');
}

/**
 * Parts up to this size (partBytes) are written in one synchronous pass (mime-serialize.ts); larger ones through
 * the composer's streams, whose steps yield to the thread's other messages in between, so a small message asked
 * beside one past this size is still answered first (mime-pool.ts). Messages under it are written one after the
 * other: a small one asked after several of nearly this size waits for them, a few milliseconds at most.
 */
export const ONE_PASS_MAX_BYTES = 256 * 1024;

/** About the size of a message's parts: its texts' characters (UTF-16 units) and its attachments' bytes. */
export function partBytes(input: MimeInput): number {
  let bytes = input.subject.length + (input.html?.length ?? 0) + (input.text?.length ?? 0);
  for (const a of input.attachments) bytes += a.content.length;
  return bytes;
}

/** Async, so that an error while the options are made rejects like one while building (the pool's threads count on it). */
export async function composeMime(input: MimeInput): Promise<Buffer> {
  const root = mimeTree(input);
  const bytes = partBytes(input) <= ONE_PASS_MAX_BYTES ? serializeMime(root) : undefined;
  if (bytes) return bytes;
  return new Promise((resolve, reject) => root.build((err, message) => (err ? reject(err) : resolve(message))));
}

/**
 * The composer's tree of the message. baseBoundary: the composer's own form (8 random bytes in hex), which it
 * would otherwise draw from OpenSSL once per message; ours comes from the identifier pool (src/ids.ts).
 */
export function mimeTree(input: MimeInput, baseBoundary = identifierBytes(8).toString('hex')): MimeNode {
  // baseBoundary is an option MailComposer reads, untyped
  const options: Mail.Options & { baseBoundary: string } = {
    baseBoundary,
    textEncoding: textEncoding(input.subject, input.html, input.text),
    from: formatAddress(input.from),
    to: input.to.map(formatAddress),
    cc: input.cc.length ? input.cc.map(formatAddress) : undefined,
    replyTo: input.replyTo.length ? input.replyTo.map(formatAddress) : undefined,
    subject: input.subject,
    html: crlfLines(input.html),
    text: crlfLines(input.text),
    headers: input.headers.map(([key, value]) => ({ key, value })),
    attachments: input.attachments.map((a) => ({
      filename: a.filename,
      content: a.content,
      contentType: a.contentType,
      cid: a.contentId,
      contentDisposition: a.contentId ? 'inline' : 'attachment',
    })),
    messageId: `<${input.messageId}>`,
    date: new Date(input.date),
    disableFileAccess: true,
    disableUrlAccess: true,
  };
  return new MailComposer(options).compile();
}
