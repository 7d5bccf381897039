/**
 * The last stage of the inbound path: a bounce or complaint that arrived
 * after the message left (an asynchronous DSN, an ARF report) is written like
 * the MTA writes a synchronous one: the message's new state, a
 * `message.bounced` / `message.complained` event (webhooks and rollups follow
 * from it in the same transaction) and, for hard bounces and complaints, a
 * suppression. Repeats are ignored, so a report sent twice counts once.
 *
 * A delay notice (DSN `Action: delayed`) is not a bounce: a server further on
 * still has the message and keeps trying. It records no event and changes no
 * status; it is noted in the message's `last_response`, at most once per
 * DELAY_NOTE_INTERVAL_MS and only while the message is `sent` or `delivered`,
 * so replaying one notice a thousand times writes once.
 */
import type { AppDeps } from '../deps';
import { fromJson } from '../db';
import { iso } from '../clock';
import type { Mode } from '../auth/scopes';
import { messageEventData, recordEvent } from '../events/record';
import { addSuppression } from '../suppressions/store';

/** The facts of a message an inbound report is about. */
export interface ReportedMessage {
  id: string;
  accountId: string;
  mode: Mode;
  status: string;
  toEmail: string;
  fromEmail: string;
  tags: string[];
  metadata: Record<string, string>;
}

export interface AsyncBounce {
  type: 'hard' | 'soft';
  category: string;
  suppress: boolean;
  code: number | null;
  enhancedCode: string | null;
  diagnostic: string;
}

/** Only messages that have left can bounce or be complained about later. */
const LEFT = ['sent', 'delivered'];
/** Remote servers retry a delayed message every 15–60 minutes; one note per hour says all there is to say. */
export const DELAY_NOTE_INTERVAL_MS = 60 * 60_000;
const DELAY_NOTE = 'Delayed further on: ';

type Row = Record<string, any>;
const toMessage = (r: Row): ReportedMessage => ({
  id: r.id, accountId: r.account_id, mode: r.mode, status: r.status, toEmail: r.to_email, fromEmail: r.from_email,
  tags: fromJson<string[]>(r.tags, []), metadata: fromJson<Record<string, string>>(r.metadata, {}),
});
const COLUMNS = ['id', 'account_id', 'mode', 'status', 'to_email', 'from_email', 'tags', 'metadata'];

export async function messageById(deps: AppDeps, id: string): Promise<ReportedMessage | undefined> {
  const row = await deps.db('messages').where({ id }).first(COLUMNS);
  return row && toMessage(row);
}

export type RecordResult = 'recorded' | 'duplicate' | 'not_sent' | 'too_soon';

/** A final failure: the message becomes bounced, once. */
export async function recordAsyncBounce(deps: AppDeps, message: ReportedMessage, bounce: AsyncBounce): Promise<RecordResult> {
  const result = await deps.db.transaction(async (trx): Promise<RecordResult> => {
    const now = deps.clock.now();
    const changed = await trx('messages').where({ id: message.id }).whereIn('status', LEFT)
      .update({ status: 'bounced', bounced_at: now, last_response: bounce.diagnostic, updated_at: now });
    if (!changed) return (await trx('messages').where({ id: message.id }).first('status'))?.status === 'bounced' ? 'duplicate' : 'not_sent';
    await recordEvent(trx, {
      accountId: message.accountId, mode: message.mode, type: 'message.bounced', messageId: message.id, at: now,
      data: messageEventData(message, {
        bounced_at: iso(now), type: bounce.type, code: bounce.code, enhanced_code: bounce.enhancedCode,
        diagnostic: bounce.diagnostic, category: bounce.category,
      }),
    });
    if (bounce.type === 'hard' && bounce.suppress) {
      await addSuppression(trx, { accountId: message.accountId, email: message.toEmail, reason: 'hard_bounce', sourceMessageId: message.id }, now);
    }
    return 'recorded';
  });
  if (result === 'recorded') deps.signals.emit('webhooksChanged');
  return result;
}

/** Notes a delay notice on a message still out there; one conditional update, so concurrent replays write once. */
export async function recordDelayNotice(deps: AppDeps, message: ReportedMessage, diagnostic: string): Promise<RecordResult> {
  const now = deps.clock.now();
  const changed = await deps.db('messages').where({ id: message.id }).whereIn('status', LEFT)
    .where((q) => q.whereNull('last_response').orWhereNot('last_response', 'like', `${DELAY_NOTE}%`).orWhere('updated_at', '<=', now - DELAY_NOTE_INTERVAL_MS))
    .update({ last_response: (DELAY_NOTE + diagnostic).slice(0, 1000), updated_at: now });
  if (changed) return 'recorded';
  const current = await deps.db('messages').where({ id: message.id }).first('status');
  return current && LEFT.includes(current.status) ? 'too_soon' : 'not_sent';
}

export async function recordComplaint(deps: AppDeps, message: ReportedMessage, feedbackType: string): Promise<RecordResult> {
  const result = await deps.db.transaction(async (trx): Promise<RecordResult> => {
    const now = deps.clock.now();
    const current = await trx('messages').where({ id: message.id }).first('status');
    if (!current || !LEFT.includes(current.status)) return 'not_sent';
    if (await trx('events').where({ message_id: message.id, type: 'message.complained' }).first('id')) return 'duplicate';
    await recordEvent(trx, {
      accountId: message.accountId, mode: message.mode, type: 'message.complained', messageId: message.id, at: now,
      data: messageEventData(message, { complained_at: iso(now), feedback_type: feedbackType }),
    });
    await addSuppression(trx, { accountId: message.accountId, email: message.toEmail, reason: 'complaint', sourceMessageId: message.id }, now);
    return 'recorded';
  });
  if (result === 'recorded') deps.signals.emit('webhooksChanged');
  return result;
}
