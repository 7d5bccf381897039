/**
 * The event sink: recordEvent (src/events/record.ts) calls it for every event,
 * inside the caller's transaction, so a delivery row exists exactly when its
 * event does. It is registered process-wide, hence a pure function of
 * (trx, event): no captured app state; the app's dispatcher is found by the
 * transaction's writer (handoff.ts). Rows it takes are handed to it in memory
 * once durable; the others wake the dispatchers after the commit (see
 * wakeAfterCommit) to claim them.
 * An event goes only to webhooks of its own mode: a webhook created with a
 * sandbox key never receives live events, and a live one never sandbox events.
 * Which webhooks those are comes from memory (subscriptions.ts), not a SELECT
 * in the transaction.
 */
import type { Tx } from '../db';
import type { RecordedEvent } from '../events/record';
import { EVENT_TYPES, isExtensionEvent } from '../events/schemas';
import { insertRows } from '../db/buffer';
import { eventRequestBody } from './event-body';
import { newDeliveryRows } from './deliveries';
import { handWhenDurable, takerFor } from './handoff';
import { subscriptionsOf } from './subscriptions';

const PUBLIC_EVENTS: ReadonlySet<string> = new Set(EVENT_TYPES);

/**
 * `*` means the seven event types of the spec, not internal ones some module may record, nor the extensions
 * (message.deferred, ip.listed, ip.delisted): a receiver written for the spec's events gets no new shapes
 * unless it asks for them by name.
 */
export function subscribes(events: readonly string[], type: string): boolean {
  if (!PUBLIC_EVENTS.has(type)) return false;
  return events.includes(type) || (events.includes('*') && !isExtensionEvent(type));
}

/**
 * The event's delivery rows. Those the app's dispatcher takes (handoff.ts) are written leased to it and handed
 * over once the commit is durable; the others wake the dispatchers to claim them after the commit.
 */
export async function enqueueWebhookDeliveries(trx: Tx, event: RecordedEvent): Promise<void> {
  if (!PUBLIC_EVENTS.has(event.type)) return;
  const hooks = await subscriptionsOf(trx, { accountId: event.accountId, mode: event.mode });
  const matching = hooks.filter((h) => subscribes(h.events, event.type)).map((h) => h.id);
  if (!matching.length) return;
  const rows = newDeliveryRows(event, matching);
  const taker = takerFor(trx);
  const taken = rows.filter((row) => {
    const lease = taker?.reserve(row.webhook_id);
    if (lease) Object.assign(row, { lease_owner: lease.owner, lease_expires_at: lease.expiresAt });
    return lease != null;
  });
  let body = '';
  try {
    if (taken.length) body = eventRequestBody(event); // only what is handed over needs it now
    await insertRows(trx, 'webhook_deliveries', rows);
  } catch (err) {
    taker?.settle(taken.map((row) => ({ row, body })), false); // not written: the reservations are given back
    throw err;
  }
  if (taker && taken.length) handWhenDurable(trx, taker, taken.map((row) => ({ row, body })));
  const left = rows.filter((row) => row.lease_owner === null).map((row) => row.webhook_id);
  if (left.length) wakeAfterCommit(trx, left);
}

/**
 * A safety net under the `webhooksChanged` signal callers emit after their
 * commit: when this transaction commits with new delivery rows, running
 * dispatchers (any app in this process; an extra look costs two queries) are
 * woken too, so a stage that forgets the signal delays nothing. They are told
 * whose rows these are: a dispatcher already holding a batch of that
 * webhook's rows need not look now.
 */
type CommittedListener = (webhookIds: ReadonlySet<string>) => void;
const committedListeners = new Set<CommittedListener>();
/** the webhooks with new rows in each open transaction */
const armed = new WeakMap<Tx, Set<string>>();

export function onDeliveriesCommitted(listener: CommittedListener): () => void {
  committedListeners.add(listener);
  return () => committedListeners.delete(listener);
}

function wakeAfterCommit(trx: Tx, webhookIds: string[]): void {
  const known = armed.get(trx);
  if (known) {
    for (const id of webhookIds) known.add(id);
    return;
  }
  const ids = new Set(webhookIds);
  armed.set(trx, ids);
  trx.executionPromise.then(
    () => committedListeners.forEach((listener) => listener(ids)),
    () => undefined, // rolled back: the rows are gone with it
  );
}
