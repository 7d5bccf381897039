/**
 * Bulk-looking mail gets one-click unsubscribe by default. Gmail and Yahoo
 * require RFC 8058 one-click unsubscribe of bulk senders; transactional mail
 * (a receipt, a password reset) must not carry it. Pigeon cannot tell the two
 * apart by content, so the sender says so with a tag: a message tagged with
 * one of `messages.bulkTags` (default bulk, marketing, newsletter; compared
 * case-insensitively) gets List-Unsubscribe and List-Unsubscribe-Post unless
 * the send sets list_unsubscribe (either way) or brings its own
 * List-Unsubscribe header, which is then left alone.
 */
import type { Config } from '../config';

export const isBulk = (config: Pick<Config, 'messages'>, tags: readonly string[]): boolean => {
  const bulk = new Set(config.messages.bulkTags.map((t) => t.toLowerCase()));
  return tags.some((t) => bulk.has(t.toLowerCase()));
};

/** For the send API: `headers` are the caller's extra headers. */
export function listUnsubscribeFor(config: Pick<Config, 'messages'>, asked: boolean | undefined, tags: readonly string[], headers: Record<string, string>): boolean {
  if (asked !== undefined) return asked;
  return isBulk(config, tags) && !Object.keys(headers).some((name) => name.toLowerCase() === 'list-unsubscribe');
}

/** For raw MIME relayed over SMTP: its own List-Unsubscribe field (in the header block) is kept. */
export function listUnsubscribeForRaw(config: Pick<Config, 'messages'>, asked: boolean | undefined, tags: readonly string[], raw: Buffer): boolean {
  if (asked !== undefined) return asked;
  if (!isBulk(config, tags)) return false;
  const end = raw.indexOf('\r\n\r\n');
  const header = raw.subarray(0, end < 0 ? raw.length : end).toString('latin1');
  return !/(^|\r\n)list-unsubscribe[ \t]*:/i.test(header);
}
