/**
 * What a tracking request does once its token is verified: record
 * message.opened / message.clicked through recordEvent (webhook deliveries
 * and rollups follow in the same transaction), or add the recipient to the
 * suppression list for a one-click unsubscribe.
 *
 * The suppression list is the account's, shared by both modes and deciding
 * which live mail leaves; a sandbox key may not write it (docs/security.md).
 * So a sandbox message's unsubscribe link answers as a live one does but
 * leaves the list alone: otherwise a sandbox send to any address, then a POST
 * to its own /u/ link, would suppress that address for live mail.
 *
 * Tracking URLs need no key, so anyone holding one can replay it: each message
 * records at most MAX_EVENTS_PER_TYPE opens and clicks; beyond that requests are
 * still answered but not recorded, which bounds what a replay can write.
 */
import type { AppDeps } from '../deps';
import type { Queryable, Tx } from '../db';
import { fromJson } from '../db';
import { iso } from '../clock';
import type { Mode } from '../auth/scopes';
import { MessageFacts, messageEventData, recordEvent } from '../events/record';
import { addSuppression } from '../suppressions/store';
import { isPrefetch } from './proxies';

export const MAX_EVENTS_PER_TYPE = 100;
const MAX_USER_AGENT = 500;

export interface TrackedMessage extends MessageFacts {
  accountId: string;
}

export interface Visit {
  userAgent: string | null;
  clientIp: string;
}

export async function findTrackedMessage(db: Queryable, id: string): Promise<TrackedMessage | undefined> {
  const r = await db('messages').where({ id }).first('id', 'account_id', 'mode', 'to_email', 'from_email', 'tags', 'metadata');
  if (!r) return undefined;
  return {
    id: r.id,
    accountId: r.account_id,
    mode: r.mode as Mode,
    toEmail: r.to_email,
    fromEmail: r.from_email,
    tags: fromJson<string[]>(r.tags, []),
    metadata: fromJson<Record<string, string>>(r.metadata, {}),
  };
}

const userAgentOf = (visit: Visit): string | null => (visit.userAgent ? visit.userAgent.slice(0, MAX_USER_AGENT) : null);

async function earlier(trx: Tx, messageId: string, type: string): Promise<Array<{ data: string }>> {
  return trx('events').where({ message_id: messageId, type }).select('data').limit(MAX_EVENTS_PER_TYPE);
}

/** Records an open; false when the message is unknown. */
export async function recordOpen(deps: AppDeps, messageId: string, visit: Visit): Promise<boolean> {
  const now = deps.clock.now();
  const recorded = await deps.db.transaction(async (trx) => {
    const message = await findTrackedMessage(trx, messageId);
    if (!message) return false;
    const before = await earlier(trx, messageId, 'message.opened');
    if (before.length >= MAX_EVENTS_PER_TYPE) return true;
    const userAgent = userAgentOf(visit);
    await recordEvent(trx, {
      accountId: message.accountId,
      mode: message.mode,
      type: 'message.opened',
      messageId,
      at: now,
      data: messageEventData(message, { opened_at: iso(now), user_agent: userAgent, unique: before.length === 0, prefetched: isPrefetch(userAgent, visit.clientIp) }),
    });
    return true;
  });
  if (recorded) deps.signals.emit('webhooksChanged');
  return recorded;
}

/** Records a click on `url` (unique = first click on this URL in this message); false when the message is unknown. */
export async function recordClick(deps: AppDeps, messageId: string, url: string, visit: Visit): Promise<boolean> {
  const now = deps.clock.now();
  const recorded = await deps.db.transaction(async (trx) => {
    const message = await findTrackedMessage(trx, messageId);
    if (!message) return false;
    const before = await earlier(trx, messageId, 'message.clicked');
    if (before.length >= MAX_EVENTS_PER_TYPE) return true;
    const unique = !before.some((e) => fromJson<{ url?: string }>(e.data, {}).url === url);
    await recordEvent(trx, {
      accountId: message.accountId,
      mode: message.mode,
      type: 'message.clicked',
      messageId,
      at: now,
      data: messageEventData(message, { clicked_at: iso(now), url, user_agent: userAgentOf(visit), unique }),
    });
    return true;
  });
  if (recorded) deps.signals.emit('webhooksChanged');
  return recorded;
}

/**
 * One-click unsubscribe: suppresses a live message's recipient for its account
 * (`added` false when already listed, or for a sandbox message, which changes
 * nothing). Undefined when the message is unknown.
 */
export async function unsubscribeRecipient(deps: AppDeps, messageId: string): Promise<{ email: string; added: boolean } | undefined> {
  return deps.db.transaction(async (trx) => {
    const message = await findTrackedMessage(trx, messageId);
    if (!message) return undefined;
    if (message.mode !== 'live') {
      deps.log.info({ messageId, mode: message.mode }, 'unsubscribe from a sandbox message: the suppression list is not changed');
      return { email: message.toEmail, added: false };
    }
    const added = await addSuppression(
      trx,
      { accountId: message.accountId, email: message.toEmail, reason: 'unsubscribe', sourceMessageId: messageId },
      deps.clock.now(),
    );
    return { email: message.toEmail, added };
  });
}
