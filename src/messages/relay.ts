/**
 * Accepting a ready-made message (SMTP submission): the same limits, account
 * rules, events, usage and durability as the send API, but the MIME comes
 * from the client. Its header block gets the submission fix-ups (Message-ID,
 * Date, no Bcc); every envelope recipient becomes one message sharing one
 * content row. Errors are ApiErrors (413/422) the caller maps to SMTP replies.
 */
import type { AppDeps } from '../deps';
import type { Mode } from '../auth/scopes';
import { ApiError, unprocessable } from '../http/errors';
import { newId } from '../ids';
import { isVerifiedDomain } from '../domains/lookup';
import { poolExists } from '../pools/lookup';
import { acceptBatch, AcceptedMessage, NewMessage } from './accept';
import { parseEmail } from './addresses';
import { resolveSendAt } from './prepare';
import { TAG } from './schemas';
import { listUnsubscribeForRaw } from './bulk';
import { fixSubmittedMessage } from './raw-headers';

export interface RawSubmission {
  raw: Buffer;
  /** Envelope sender (MAIL FROM) or the From address: its domain must be verified for live mode. */
  from: string;
  /** Envelope recipients (RCPT TO). */
  recipients: string[];
  /** Decoded subject for the record; taken from the header when absent. */
  subject?: string | null;
  tags?: string[];
  metadata?: Record<string, string>;
  ipPool?: string | null;
  /** ms since the epoch; null/absent or past: at once. */
  sendAt?: number | null;
  trackOpens?: boolean;
  trackClicks?: boolean;
  listUnsubscribe?: boolean;
  source?: 'smtp' | 'api';
}

export interface EnqueueResult {
  batchId: string;
  ids: string[];
  messages: AcceptedMessage[];
}

function checkLimits(deps: AppDeps, input: RawSubmission): void {
  const { maxRecipients, maxMessageBytes } = deps.config.limits;
  if (input.recipients.length === 0) throw unprocessable('missing_recipients', 'at least one recipient is required', 'recipients');
  if (input.recipients.length > maxRecipients) {
    throw unprocessable('too_many_recipients', `at most ${maxRecipients} recipients per message`, `recipients[${maxRecipients}]`);
  }
  if (input.raw.length > maxMessageBytes) {
    throw new ApiError(413, 'invalid_request_error', 'message_too_large', `the message is ${input.raw.length} bytes; the limit is ${maxMessageBytes}`);
  }
  const tags = input.tags ?? [];
  if (tags.length > 10) throw unprocessable('too_many_tags', 'at most 10 tags', 'tags');
  tags.forEach((t, i) => {
    if (t.length < 1 || t.length > 64 || !TAG.test(t)) throw unprocessable('invalid_tag', 'a tag is 1 to 64 characters without control characters, " or \\', `tags[${i}]`);
  });
  const metadata = Object.entries(input.metadata ?? {});
  if (metadata.length > 20) throw unprocessable('too_many_metadata_keys', 'at most 20 metadata keys', 'metadata');
  for (const [k, v] of metadata) {
    if (k.length < 1 || k.length > 64 || typeof v !== 'string' || v.length > 1000) throw unprocessable('invalid_metadata', 'metadata keys are 1 to 64 characters, values strings up to 1,000', `metadata.${k}`);
  }
}

/**
 * Stores a relayed message for each recipient; resolves once it is durable.
 * Throws ApiError (413 message_too_large, 422 invalid_address,
 * too_many_recipients, domain_not_verified, unknown_ip_pool, send_at_too_far).
 */
export async function enqueueRaw(deps: AppDeps, who: { accountId: string; mode: Mode }, input: RawSubmission): Promise<EnqueueResult> {
  checkLimits(deps, input);
  const now = deps.clock.now();
  const from = parseEmail(input.from, 'from');
  const recipients = input.recipients.map((r, i) => parseEmail(r, `recipients[${i}]`));
  const sendAtIso = input.sendAt == null ? undefined : new Date(input.sendAt).toISOString();
  const sendAt = resolveSendAt(sendAtIso, now, deps.config.limits.sendAtHorizonHours);
  const domainVerified = await isVerifiedDomain(deps.db, who.accountId, from.domain);
  if (who.mode === 'live' && !domainVerified) {
    throw unprocessable('domain_not_verified', `${from.domain} is not a verified sending domain of this account`, 'from');
  }
  if (input.ipPool && !(await poolExists(deps.db, who.accountId, input.ipPool))) {
    throw unprocessable('unknown_ip_pool', `no IP pool named '${input.ipPool}'`, 'ip_pool');
  }
  const ids = recipients.map(() => newId('msg'));
  const fixed = fixSubmittedMessage(input.raw, `${ids[0]}@${deps.config.hostname}`, now);
  const contentId = newId('cnt');
  const cc = [...fixed.shownCc];
  const messages: NewMessage[] = recipients.map((r, i) => {
    const lower = r.email.toLowerCase();
    const rcptType = fixed.shownTo.has(lower) ? 'to' : fixed.shownCc.has(lower) ? 'cc' : 'bcc';
    return {
      id: ids[i], contentId, rcptType, fromEmail: from.email, fromName: null, toEmail: r.email, toName: null,
      recipientDomain: r.domain, cc, subject: input.subject ?? fixed.subject, messageIdHeader: fixed.messageIdHeader,
    };
  });
  const batchId = newId('bat');
  const accepted = await acceptBatch(deps, {
    accountId: who.accountId, mode: who.mode, batchId, source: input.source ?? 'smtp', now, sendAt,
    sendingDomain: from.domain, domainVerified, tags: input.tags ?? [], metadata: input.metadata ?? {}, ipPool: input.ipPool ?? null,
    trackOpens: input.trackOpens ?? deps.config.tracking.trackOpensDefault, trackClicks: input.trackClicks ?? deps.config.tracking.trackClicksDefault,
    listUnsubscribe: listUnsubscribeForRaw(deps.config, input.listUnsubscribe, input.tags ?? [], input.raw),
    contents: [{ id: contentId, raw: fixed.raw }], messages,
  });
  return { batchId, ids, messages: accepted };
}
