/**
 * The bytes of a MIME tree built by nodemailer's MailComposer, written in one
 * synchronous pass instead of through MimeNode#build's streams.
 *
 * build() joins each node's headers and content through a PassThrough per
 * node, a quoted-printable or base64 encoder stream per encoded part and a
 * setImmediate between every two steps, then a last-newline transform: for a
 * 5 KB text message that machinery was the larger share of the 92–167 µs of
 * CPU a message took (43–97 µs without it, with the scans mime.ts dropped).
 * The parts of the tree are all in memory here (strings and byte arrays: file
 * and URL access are switched off, and nothing is streamed), so the same
 * output is a walk over the tree. Each node still
 * writes its header block with nodemailer's own buildHeaders (address
 * formatting, RFC 2047 words, folding, boundaries), and its content with
 * nodemailer's own qp and base64 functions, in the shape their encoder
 * streams give a content that arrives as one chunk (as a string or buffer
 * content always does). test/messages/mime-serialize.test.ts holds the result
 * to build()'s bytes over a corpus of messages.
 *
 * A tree this does not know to be such (raw nodes, transforms, a stream or
 * anything else as content, a newline option) gets `undefined`, and the
 * caller builds it the usual way.
 */
import type MimeNode from 'nodemailer/lib/mime-node';
import * as qp from 'nodemailer/lib/qp';
import * as base64 from 'nodemailer/lib/base64';

/** What the walk reads of a node beyond the typed interface: the fields build() consults. */
interface NodeInternals {
  content?: unknown;
  multipart?: boolean;
  boundary?: string | false;
  childNodes: MimeNode[];
  newline?: unknown;
  _raw?: unknown;
  _transforms: unknown[];
  _processFuncs: unknown[];
  getTransferEncoding(): string | false;
  buildHeaders(): string;
}

/** The encoder streams' line length (build() gives them no options). */
const LINE_LENGTH = 76;

const LF = 0x0a;
const CR = 0x0d;

/** The message's bytes as `root.build()` gives them, or undefined when the tree holds anything but in-memory parts. */
export function serializeMime(root: MimeNode): Buffer | undefined {
  const top = root as unknown as NodeInternals;
  // build()'s own transforms and newline conversion sit on the root's stream only
  if (top.newline || top._transforms.length || top._processFuncs.length || !serializable(top)) return undefined;
  const chunks: Buffer[] = [];
  write(top, chunks);
  const last = chunks.length ? lastByte(chunks) : undefined;
  // MimeNode's LastNewline: the message ends with a line break
  if (last !== LF) chunks.push(Buffer.from(last === CR ? '\n' : '\r\n'));
  return Buffer.concat(chunks);
}

function serializable(node: NodeInternals): boolean {
  if (node._raw !== undefined && node._raw !== null && node._raw !== false) return false;
  const content = node.content;
  if (content && typeof content !== 'string' && !(content instanceof Uint8Array)) return false;
  return node.childNodes.every((child) => serializable(child as unknown as NodeInternals));
}

/** One node as MimeNode#stream writes it: headers, a blank line, the content, then each child between boundaries. */
function write(node: NodeInternals, chunks: Buffer[]): void {
  const transferEncoding = node.getTransferEncoding(); // read before the headers are built, as stream() does
  chunks.push(Buffer.from(`${node.buildHeaders()}\r\n\r\n`));
  const content = node.content as string | Uint8Array | undefined;
  if (content) chunks.push(encoded(bytesOf(content), transferEncoding));
  if (!node.multipart) return;
  node.childNodes.forEach((child, i) => {
    chunks.push(Buffer.from(`${i > 0 ? '\r\n' : ''}--${node.boundary}\r\n`));
    write(child as unknown as NodeInternals, chunks);
  });
  chunks.push(Buffer.from(`\r\n--${node.boundary}--\r\n`));
}

function bytesOf(content: string | Uint8Array): Buffer {
  if (typeof content === 'string') return Buffer.from(content);
  return Buffer.isBuffer(content) ? content : Buffer.from(content.buffer, content.byteOffset, content.byteLength);
}

function encoded(bytes: Buffer, transferEncoding: string | false): Buffer {
  if (!bytes.length) return bytes;
  if (transferEncoding === 'quoted-printable') return Buffer.from(qp.wrap(qp.encode(bytes), LINE_LENGTH));
  if (transferEncoding === 'base64') return Buffer.from(base64Lines(bytes), 'ascii');
  return bytes; // any other transfer encoding passes as is
}

/**
 * base64's Encoder given the whole content as one chunk: the whole 3-byte groups encoded and wrapped, the
 * lines before the last ended with CRLF, then (at the stream's end) the last 1 or 2 bytes' encoding appended
 * to the last line, unwrapped.
 */
function base64Lines(bytes: Buffer): string {
  const whole = bytes.length - (bytes.length % 3);
  const wrapped = base64.wrap(base64.encode(bytes.subarray(0, whole)), LINE_LENGTH);
  const lastLF = wrapped.lastIndexOf('\n');
  let head = lastLF < 0 ? '' : wrapped.substring(0, lastLF + 1);
  if (head && !head.endsWith('\r\n')) head += '\r\n';
  const lastLine = lastLF < 0 ? wrapped : wrapped.substring(lastLF + 1);
  return head + lastLine + (whole < bytes.length ? base64.encode(bytes.subarray(whole)) : '');
}

function lastByte(chunks: Buffer[]): number | undefined {
  for (let i = chunks.length - 1; i >= 0; i--) if (chunks[i].length) return chunks[i][chunks[i].length - 1];
  return undefined;
}
