/**
 * Signed tokens in tracking URLs (/t/o/, /t/c/, /u/). A token is the
 * base64url of a small binary payload followed by a 96-bit truncated
 * HMAC-SHA256 under a key derived from the appliance's master key. Nothing is
 * stored per link: a click token carries its destination URL, and because the
 * URL is under the MAC, a forged or altered token is rejected (404) instead of
 * becoming an open redirect.
 *
 * Payload: version (1) | kind ('o' | 'c' | 'u') | id length (1) | message id
 * [| link index (2) | URL (UTF-8)] for clicks.
 */
import crypto from 'node:crypto';
import { deriveKey, loadOrCreateMasterKey } from '../crypto/secret-box';

const VERSION = 1;
const MAC_BYTES = 12;
const KINDS = { open: 0x6f, click: 0x63, unsubscribe: 0x75 } as const;
/** Longest token accepted before any work is done (an URL of ~4 KB). */
export const MAX_TOKEN_LENGTH = 6000;

export type TokenKind = keyof typeof KINDS;

export interface TokenPayload {
  kind: TokenKind;
  messageId: string;
  /** Click tokens: position of the link in the message and its destination. */
  linkIndex?: number;
  url?: string;
}

/** The tracking key for a data directory (what delivery passes to instrumentMessage as `key`). */
export function trackingKey(dataDir: string): Buffer {
  return deriveKey(loadOrCreateMasterKey(dataDir), 'tracking');
}

const mac = (key: Buffer, payload: Buffer): Buffer => crypto.createHmac('sha256', key).update(payload).digest().subarray(0, MAC_BYTES);

export function signToken(key: Buffer, p: TokenPayload): string {
  const id = Buffer.from(p.messageId, 'latin1');
  if (id.length > 255 || !/^[\x21-\x7e]+$/.test(p.messageId)) throw new Error('message id cannot go in a token');
  const parts = [Buffer.from([VERSION, KINDS[p.kind], id.length]), id];
  if (p.kind === 'click') {
    const index = Buffer.alloc(2);
    index.writeUInt16BE(Math.min(p.linkIndex ?? 0, 0xffff));
    parts.push(index, Buffer.from(p.url ?? '', 'utf8'));
  }
  const payload = Buffer.concat(parts);
  return Buffer.concat([payload, mac(key, payload)]).toString('base64url');
}

/** The payload when the token is intact and of the expected kind; undefined otherwise. */
export function verifyToken(key: Buffer, token: string, kind: TokenKind): TokenPayload | undefined {
  if (!token || token.length > MAX_TOKEN_LENGTH || !/^[A-Za-z0-9_-]+$/.test(token)) return undefined;
  const raw = Buffer.from(token, 'base64url');
  if (raw.length < 3 + 1 + MAC_BYTES) return undefined;
  const payload = raw.subarray(0, raw.length - MAC_BYTES);
  const given = raw.subarray(raw.length - MAC_BYTES);
  if (!crypto.timingSafeEqual(given, mac(key, payload))) return undefined;
  if (payload[0] !== VERSION || payload[1] !== KINDS[kind]) return undefined;
  const idEnd = 3 + payload[2];
  if (payload.length < idEnd) return undefined;
  const messageId = payload.subarray(3, idEnd).toString('latin1');
  if (kind !== 'click') return payload.length === idEnd ? { kind, messageId } : undefined;
  if (payload.length < idEnd + 2) return undefined;
  return { kind, messageId, linkIndex: payload.readUInt16BE(idEnd), url: payload.subarray(idEnd + 2).toString('utf8') };
}
