/**
 * The event sink: recordEvent (src/events/record.ts) calls it for every event,
 * inside the caller's transaction, so a delivery row exists exactly when its
 * event does. It is registered process-wide, hence a pure function of
 * (trx, event): no captured app state. The caller emits `webhooksChanged`
 * after its commit and the dispatcher sends at once.
 */
import type { Tx } from '../db';
import type { RecordedEvent } from '../events/record';
import { EVENT_TYPES } from '../events/schemas';
import { insertDeliveries } from './deliveries';
import { subscribedWebhooks } from './store';

const PUBLIC_EVENTS: ReadonlySet<string> = new Set(EVENT_TYPES);

/** `*` means the seven public event types, not internal ones some module may record. */
export function subscribes(events: readonly string[], type: string): boolean {
  if (!PUBLIC_EVENTS.has(type)) return false;
  return events.includes('*') || events.includes(type);
}

export async function enqueueWebhookDeliveries(trx: Tx, event: RecordedEvent): Promise<void> {
  if (!PUBLIC_EVENTS.has(event.type)) return;
  const hooks = await subscribedWebhooks(trx, event.accountId);
  const matching = hooks.filter((h) => subscribes(h.events, event.type)).map((h) => h.id);
  await insertDeliveries(trx, event, matching);
}
