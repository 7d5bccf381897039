/**
 * From DATA to the queue: the submission listener's accept step. The message
 * arrives already checked for line structure and size (data-reader.ts); here
 * its header block is checked (one From, one Date), the X-Pigeon-* options are
 * read and removed, and the result goes through the messages module's
 * `enqueueRaw`, the same accept path as the API: the From domain rule for live
 * keys, one message per envelope recipient, limits, the queued events and
 * usage, in one durable transaction. Only then is the reply written.
 */
import addressparser from 'nodemailer/lib/addressparser';
import type { AppDeps } from '../deps';
import { ApiError } from '../http/errors';
import { enqueueRaw } from '../messages';
import { parseEmail } from '../messages/addresses';
import type { SubmitUser } from './auth';
import { fieldValue, joinMessage, splitMessage, type HeaderField } from './headers';
import type { PigeonOptions } from './pigeon-headers';
import { queuedReply, replyForApiError, smtpReply, SmtpReply } from './replies';

export type PigeonHeaderReader = (fields: HeaderField[]) => { options: PigeonOptions; kept: HeaderField[] };

export interface Submission {
  user: SubmitUser;
  recipients: string[];
  raw: Buffer;
}

const refuse = (text: string) => smtpReply(554, '5.6.0', text);

function single(fields: HeaderField[], name: string, shown: string, why: string): HeaderField {
  const found = fields.filter((f) => f.name === name);
  if (found.length === 0) throw refuse(`Message has no ${shown} header; ${why}`);
  if (found.length > 1) throw refuse(`Message has more than one ${shown} header`);
  return found[0];
}

/** The one address of the From header, validated like the API's `from`. */
function fromAddress(fields: HeaderField[]): string {
  const value = fieldValue(single(fields, 'from', 'From', 'it names the sender and its domain must be a sending domain of the account'));
  const list = addressparser(value, { flatten: true }).filter((a) => a.address);
  if (list.length !== 1) throw refuse('From header must hold exactly one address');
  try {
    return parseEmail(list[0].address, 'from').email;
  } catch (err) {
    if (err instanceof ApiError) throw refuse(`From header: ${err.message}`);
    throw err;
  }
}

function checkDate(fields: HeaderField[]): void {
  const value = fieldValue(single(fields, 'date', 'Date', 'RFC 5322 requires one (e.g. "Date: Mon, 05 Jan 2026 09:00:00 +0000")'));
  if (Number.isNaN(Date.parse(value))) throw refuse(`Date header '${value.slice(0, 64)}' is not a date`);
}

/** Stores the message; resolves with the 250 text, or throws SmtpReply. */
export async function submit(deps: AppDeps, readPigeon: PigeonHeaderReader, s: Submission): Promise<string> {
  const { fields, body, malformed } = splitMessage(s.raw);
  if (malformed) throw refuse('The header block has a line that is not a header field (is the empty line before the body missing?)');
  const from = fromAddress(fields);
  checkDate(fields);
  const { options, kept } = readPigeon(fields);
  const raw = kept.length === fields.length ? s.raw : joinMessage(kept, body);
  try {
    const result = await enqueueRaw(deps, { accountId: s.user.accountId, mode: s.user.mode }, {
      raw, from, recipients: s.recipients, source: 'smtp',
      tags: options.tags, metadata: options.metadata, ipPool: options.ipPool ?? null, sendAt: options.sendAt ?? null,
      trackOpens: options.trackOpens, trackClicks: options.trackClicks, listUnsubscribe: options.listUnsubscribe,
    });
    return queuedReply(result.ids, result.batchId);
  } catch (err) {
    if (err instanceof ApiError) throw replyForApiError(err);
    throw err;
  }
}

export function isSmtpReply(err: unknown): err is SmtpReply {
  return err instanceof SmtpReply;
}
