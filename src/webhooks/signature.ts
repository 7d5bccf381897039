/**
 * Request signing. `Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(
 * secret, "<t>.<raw body>")>`; while a rotated-out secret is inside its overlap
 * a second `v1=` signed with it follows, so a receiver that still holds the old
 * secret keeps verifying. Binding the timestamp into the MAC lets receivers
 * refuse replays older than a few minutes.
 */
import crypto from 'node:crypto';
import { randomBase62 } from '../ids';

export const SIGNATURE_HEADER = 'Service-Signature';
export const SECRET_PREFIX = 'whsec_';

export function generateSecret(): string {
  return SECRET_PREFIX + randomBase62(32);
}

export function hmacHex(secret: string, timestamp: number, body: string): string {
  return crypto.createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
}

/** The header value for a body; `secrets` newest first. */
export function signatureHeader(secrets: string[], timestamp: number, body: string): string {
  return [`t=${timestamp}`, ...secrets.map((s) => `v1=${hmacHex(s, timestamp, body)}`)].join(',');
}
