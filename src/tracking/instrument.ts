/**
 * Tracking at delivery time. Delivery's prepareContent step calls
 * instrumentMessage on the finished MIME (API-built or SMTP-relayed) before
 * DKIM signing, so the signature covers what we add.
 *
 * The MIME tree is walked with mailsplit; only inline text/html parts of the
 * message itself are decoded (base64 / quoted-printable / 7bit / 8bit),
 * rewritten (html.ts) and encoded again; every other byte — text parts,
 * attachments, embedded messages, boundaries — is copied unchanged. The pixel
 * goes into the first HTML part only, so one open counts once. With
 * listUnsubscribe the root gets RFC 8058 one-click headers.
 */
import { Splitter } from '@zone-eu/mailsplit';
import type { MimeNode, SplitterChunk } from '@zone-eu/mailsplit';
import type { Transform } from 'node:stream';
import { signToken } from './tokens';
import { rewriteHtml } from './html';

export interface InstrumentOptions {
  messageId: string;
  accountId: string;
  trackOpens: boolean;
  trackClicks: boolean;
  listUnsubscribe: boolean;
  /** The recipient of this copy (for the record; tokens name the message, which names its recipient). */
  recipient: string;
  /** http.publicUrl: where tracking and unsubscribe requests arrive. */
  publicUrl: string;
  /** trackingKey(dataDir) from ./tokens. */
  key: Buffer;
}

type Chunk = SplitterChunk;

export const trackingBase = (publicUrl: string): string => publicUrl.replace(/\/+$/, '');

export function unsubscribeUrl(opts: Pick<InstrumentOptions, 'publicUrl' | 'key' | 'messageId'>): string {
  return `${trackingBase(opts.publicUrl)}/u/${signToken(opts.key, { kind: 'unsubscribe', messageId: opts.messageId })}`;
}

export async function instrumentMessage(raw: Buffer, opts: InstrumentOptions): Promise<Buffer> {
  if (!opts.trackOpens && !opts.trackClicks && !opts.listUnsubscribe) return raw;
  const chunks = await split(raw);
  const state = { pixelPending: opts.trackOpens, linkIndex: 0 };
  const out: Buffer[] = [];
  let html: { node: MimeNode; body: Buffer[] } | undefined;
  for (const chunk of chunks) {
    if (html && chunk.type === 'body') {
      html.body.push(chunk.value);
      continue;
    }
    if (html) {
      out.push(...(await rewritePart(html.node, html.body, opts, state)));
      html = undefined;
    }
    if (chunk.type !== 'node') {
      out.push(chunk.value);
      continue;
    }
    if (chunk.root && opts.listUnsubscribe) addListUnsubscribe(chunk, opts);
    if (isTrackableHtml(chunk)) html = { node: chunk, body: [] };
    else out.push(chunk.getHeaders());
  }
  if (html) out.push(...(await rewritePart(html.node, html.body, opts, state)));
  return Buffer.concat(out);
}

async function split(raw: Buffer): Promise<Chunk[]> {
  const chunks: Chunk[] = [];
  const splitter = new Splitter();
  splitter.end(raw);
  for await (const chunk of splitter as AsyncIterable<Chunk>) chunks.push(chunk);
  return chunks;
}

function addListUnsubscribe(root: MimeNode, opts: InstrumentOptions): void {
  if (!root.headers) return;
  root.headers.remove('List-Unsubscribe');
  root.headers.remove('List-Unsubscribe-Post');
  root.headers.add('List-Unsubscribe-Post', 'List-Unsubscribe=One-Click');
  root.headers.add('List-Unsubscribe', `<${unsubscribeUrl(opts)}>`);
}

/** Inline HTML of the message itself, in a charset whose ASCII bytes mean ASCII. */
function isTrackableHtml(node: MimeNode): boolean {
  if (node.contentType !== 'text/html' || node.disposition === 'attachment') return false;
  if (/^(utf-?(16|32)|ucs-?[24])/i.test(node.charset || '')) return false;
  for (let p = node.parentNode; p; p = p.parentNode) if (p.rfc822) return false;
  return true;
}

function textDecoder(charset: string | false): InstanceType<typeof TextDecoder> {
  try {
    return new TextDecoder(charset || 'utf-8');
  } catch {
    return new TextDecoder('utf-8');
  }
}

function pipeThrough(stream: Transform, input: Buffer[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const out: Buffer[] = [];
    stream.on('data', (b: Buffer) => out.push(Buffer.isBuffer(b) ? b : Buffer.from(b)));
    stream.on('end', () => resolve(Buffer.concat(out)));
    stream.on('error', reject);
    for (const b of input) stream.write(b);
    stream.end();
  });
}

async function rewritePart(node: MimeNode, body: Buffer[], opts: InstrumentOptions, state: { pixelPending: boolean; linkIndex: number }): Promise<Buffer[]> {
  const decoded = await pipeThrough(node.getDecoder(), body);
  const base = trackingBase(opts.publicUrl);
  const decoder = textDecoder(node.charset);
  const pixel = state.pixelPending ? `${base}/t/o/${signToken(opts.key, { kind: 'open', messageId: opts.messageId })}` : undefined;
  state.pixelPending = false;
  const html = rewriteHtml(decoded.toString('latin1'), {
    pixelUrl: pixel,
    publicUrl: base,
    decode: (binary) => decoder.decode(Buffer.from(binary, 'latin1')),
    trackLink: opts.trackClicks
      ? (url) => `${base}/t/c/${signToken(opts.key, { kind: 'click', messageId: opts.messageId, linkIndex: state.linkIndex++, url })}`
      : undefined,
  });
  // 7bit/8bit parts are re-encoded as quoted-printable: a rewritten line may pass 998 bytes.
  const keep = node.encoding === 'base64' || node.encoding === 'quoted-printable';
  const encoded = await pipeThrough(keep ? node.getEncoder() : node.getEncoder('quoted-printable'), [Buffer.from(html, 'latin1')]);
  // The line break before the next boundary belongs to the boundary, not to the body.
  let end = encoded.length;
  while (end > 0 && (encoded[end - 1] === 0x0a || encoded[end - 1] === 0x0d)) end--;
  return [node.getHeaders(), encoded.subarray(0, end)];
}
