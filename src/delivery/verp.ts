/**
 * The envelope sender of every outbound message is a VERP address,
 * `b+<message id>-<tag>@<bounce domain>`, so an asynchronous bounce (a DSN
 * arriving days later at the inbound listener) names the message it is about.
 * The tag is a truncated HMAC of the message id under a key derived from the
 * master secret: a forged bounce cannot name a message it has not seen.
 */
import crypto from 'node:crypto';
import type { Config } from '../config';
import { deriveKey, loadOrCreateMasterKey } from '../crypto/secret-box';

type VerpConfig = Pick<Config, 'dataDir' | 'hostname' | 'delivery'>;

/** 16 hex characters = 64 bits of HMAC: far beyond guessing at SMTP speed. */
const TAG_LENGTH = 16;
const LOCAL_PART = /^b\+(msg_[0-9a-hjkmnp-tv-z]{26})-([0-9a-f]{16})$/;

export const bounceDomain = (config: VerpConfig): string => (config.delivery.bounceDomain || config.hostname).toLowerCase();

// One entry per dataDir (one per app in the process).
const keys = new Map<string, Buffer>();

function tag(config: VerpConfig, messageId: string): string {
  let key = keys.get(config.dataDir);
  if (!key) keys.set(config.dataDir, (key = deriveKey(loadOrCreateMasterKey(config.dataDir), 'verp')));
  return crypto.createHmac('sha256', key).update(messageId).digest('hex').slice(0, TAG_LENGTH);
}

/** The return-path for a message: b+msg_…-<tag>@<bounce domain>. */
export function verpAddress(config: VerpConfig, messageId: string): string {
  return `b+${messageId}-${tag(config, messageId)}@${bounceDomain(config)}`;
}

/**
 * The message id named by a VERP address, or null when the address is not
 * ours, is malformed or carries a wrong tag. Case-insensitive: some relays
 * lower- or upper-case local parts.
 */
export function parseVerp(config: VerpConfig, address: string): string | null {
  const at = address.lastIndexOf('@');
  if (at < 0) return null;
  const domain = address.slice(at + 1).toLowerCase().replace(/\.$/, '');
  if (domain !== bounceDomain(config)) return null;
  const match = LOCAL_PART.exec(address.slice(0, at).toLowerCase());
  if (!match) return null;
  const [, messageId, given] = match;
  const expected = Buffer.from(tag(config, messageId));
  return crypto.timingSafeEqual(expected, Buffer.from(given)) ? messageId : null;
}
