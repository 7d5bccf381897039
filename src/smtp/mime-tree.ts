/**
 * A small MIME tree reader for reports. mailparser is built for showing mail
 * to people: it folds an inline `message/rfc822` part (how many feedback
 * loops attach the original) into the text body and drops its Message-ID, the
 * one header a complaint is matched by. Reports need the structure instead:
 * which part has which type, and the headers of the returned original. This
 * reader gives exactly that: nodes with their type, parameters, headers and
 * (for leaves) the body with its transfer encoding undone. It does not
 * descend into message/* parts; bounded in depth and width against hostile
 * input.
 */
import { fieldValue, splitMessage, type HeaderField } from './headers';

export interface MimeNode {
  /** lower-case type/subtype; text/plain when absent (RFC 2045) */
  type: string;
  params: Record<string, string>;
  headers: HeaderField[];
  /** decoded body of a leaf; empty for multipart */
  body: Buffer;
  children: MimeNode[];
}

const MAX_DEPTH = 8;
const MAX_PARTS = 200;

/** "multipart/report; report-type=delivery-status; boundary="b"" → type and lower-case-named params. */
export function parseContentType(value: string | undefined): { type: string; params: Record<string, string> } {
  if (!value) return { type: 'text/plain', params: {} };
  const semi = value.indexOf(';');
  const type = (semi < 0 ? value : value.slice(0, semi)).trim().toLowerCase() || 'text/plain';
  const params: Record<string, string> = {};
  const re = /;\s*([^=\s;]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;\s]*)/g;
  for (const m of (semi < 0 ? '' : value.slice(semi)).matchAll(re)) {
    const raw = m[2].startsWith('"') ? m[2].slice(1, -1).replace(/\\(.)/g, '$1') : m[2];
    params[m[1].toLowerCase()] = raw;
  }
  return { type, params };
}

function decodeQuotedPrintable(body: Buffer): Buffer {
  const text = body.toString('latin1').replace(/=\r?\n/g, '');
  return Buffer.from(text.replace(/=([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1');
}

function decodeBody(headers: HeaderField[], body: Buffer): Buffer {
  const cte = headers.find((h) => h.name === 'content-transfer-encoding');
  const encoding = cte ? fieldValue(cte).toLowerCase() : '';
  if (encoding === 'base64') return Buffer.from(body.toString('latin1').replace(/[^A-Za-z0-9+/=]/g, ''), 'base64');
  if (encoding === 'quoted-printable') return decodeQuotedPrintable(body);
  return body;
}

/** The parts between `--boundary` lines, preamble and epilogue left out. */
function splitParts(body: Buffer, boundary: string): Buffer[] {
  const text = body.toString('latin1');
  const delimiter = `--${boundary}`;
  const parts: string[] = [];
  let current: string[] | null = null;
  for (const line of text.split('\r\n')) {
    const trimmed = line.trimEnd();
    if (trimmed === `${delimiter}--`) break;
    if (trimmed === delimiter) {
      if (current) parts.push(current.join('\r\n'));
      current = [];
      if (parts.length >= MAX_PARTS) break;
    } else if (current) current.push(line);
  }
  if (current) parts.push(current.join('\r\n'));
  return parts.map((p) => Buffer.from(p, 'latin1'));
}

function readNode(raw: Buffer, depth: number, budget: { parts: number }): MimeNode {
  const { fields, body } = splitMessage(raw);
  const ct = fields.find((f) => f.name === 'content-type');
  const { type, params } = parseContentType(ct ? fieldValue(ct) : undefined);
  const node: MimeNode = { type, params, headers: fields, body: Buffer.alloc(0), children: [] };
  if (type.startsWith('multipart/') && params.boundary && depth < MAX_DEPTH) {
    for (const part of splitParts(body, params.boundary)) {
      if (++budget.parts > MAX_PARTS) break;
      node.children.push(readNode(part, depth + 1, budget));
    }
  } else node.body = decodeBody(fields, body);
  return node;
}

/** Reads a message; line ends are normalised to CRLF first (reports pass through systems that change them). */
export function readMimeTree(raw: Buffer): MimeNode {
  const normalized = Buffer.from(raw.toString('latin1').replace(/\r?\n/g, '\r\n'), 'latin1');
  return readNode(normalized, 0, { parts: 0 });
}

/** Depth-first search of the tree. */
export function findNode(node: MimeNode, test: (n: MimeNode) => boolean): MimeNode | undefined {
  if (test(node)) return node;
  for (const child of node.children) {
    const hit = findNode(child, test);
    if (hit) return hit;
  }
  return undefined;
}
