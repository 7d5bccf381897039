/**
 * Which webhooks an event goes to: the enabled webhooks of its account and
 * mode, with the event types each subscribes to. Every recorded event asks
 * (sink.ts), mostly inside a writer transaction (accept, MTA outcome), so the
 * answer comes from a per-app read cache keyed by mode and account and loaded
 * through the reader: the writer connection runs no SELECT on webhooks. An
 * owner without webhooks, the common case, is cached too (an empty list).
 *
 * When a change takes effect. Every change to an owner's webhooks (create,
 * update, enable, disable, delete: service.ts) forgets that owner's entry
 * right after its commit, before the API answers, and the bus (db/notify.ts)
 * makes the other nodes forget it when the notification arrives (the TTL
 * bounds what a lost notification leaves). So on this node every event
 * recorded after the change was answered sees it. An event recorded while the
 * change commits (its transaction under way, or its lookup loaded just before)
 * goes by the state before, as it did when the lookup was a SELECT in its
 * transaction, and that is still right: a webhook receives the events recorded
 * after it exists, never earlier ones (a message accepted before the webhook
 * was created still brings it its later events: sent, delivered...), and a
 * deleted or disabled one none recorded after the change.
 *
 * Several nodes: until the notification arrives, an event recorded on another
 * node can still name a webhook deleted here; its delivery row then fails the
 * foreign key and that event's work fails alone (the writer commits its
 * neighbours without it; an outcome is retried, an accept answered 5xx). The
 * window is the notification's delay, as it was the transaction's length with
 * the SELECT.
 */
import type { Queryable, Tx } from '../db';
import { hasReader, readerOf } from '../db/reader';
import { writerHandleOf } from '../db/writer';
import { cachePerApp, ReadCache } from '../util/read-cache';
import { subscribedWebhooks, type WebhookOwner } from './store';

export interface Subscription {
  readonly id: string;
  readonly events: readonly string[];
}

// Keys are authenticated owners (account × mode); each entry holds at most limits.webhooksPerAccount hooks.
const SUBSCRIPTION_CACHE_MAX = 10_000;
/**
 * Every change on this node forgets its entry at once and the other nodes hear of it, so the TTL only bounds a
 * lost notification (the bus logs it); a short one would make the writer's transactions wait on the reader.
 */
export const SUBSCRIPTION_CACHE_TTL_MS = 30_000;

const keyOf = (owner: WebhookOwner): string => `${owner.mode}:${owner.accountId}`;

function ownerOf(key: string): WebhookOwner {
  const colon = key.indexOf(':');
  return { mode: key.slice(0, colon) as WebhookOwner['mode'], accountId: key.slice(colon + 1) };
}

const subscriptionCache = cachePerApp('webhook-subscriptions', hasReader, (db: Queryable) =>
  new ReadCache<string, readonly Subscription[]>({
    max: SUBSCRIPTION_CACHE_MAX,
    ttlMs: SUBSCRIPTION_CACHE_TTL_MS,
    load: (key) => subscribedWebhooks(readerOf(db), ownerOf(key)),
  }));

/** The owner's enabled webhooks: from the app's cache in a writer transaction, else read in `trx` itself. */
export async function subscriptionsOf(trx: Tx, owner: WebhookOwner): Promise<readonly Subscription[]> {
  const app = writerHandleOf(trx);
  const cache = app && subscriptionCache(app);
  if (!cache) return subscribedWebhooks(trx, owner);
  return (await cache.get(keyOf(owner))) ?? [];
}

/** Called with the app's handle after a change to the owner's webhooks committed (here and on the other nodes). */
export function forgetSubscriptions(db: Queryable, owner: WebhookOwner): void {
  subscriptionCache.invalidate(db, keyOf(owner));
}
