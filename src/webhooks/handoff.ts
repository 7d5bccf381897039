/**
 * New webhook deliveries reach the dispatcher in memory. When an event is
 * recorded in a writer transaction (sink.ts) and the dispatcher of the same
 * app has room for a webhook's rows, that webhook's new delivery row is written
 * already leased to the dispatcher, in the event's own transaction, and handed
 * over with its request body once the commit is durable (db/durable-hooks.ts).
 * A delivery then costs no claim statement and no job load, and waits for no
 * turn of the writer between its event and its request; while mail flows, the
 * claims were most of what the dispatcher asked of the writer.
 *
 * Nothing lives only in memory: the row is durable and leased like a claimed
 * one. A stopping dispatcher waits for the transactions it has reservations
 * in, and gives their rows back with its other unsent ones; after a crash the
 * next start on this node releases them (owners.ts), and any other node's
 * claim takes them once the lease lapses. A rolled-back transaction hands
 * nothing; its reservations are given back.
 *
 * The dispatcher takes rows only within the bounds a claim has (per webhook
 * and in all, dispatcher.ts), and none of a webhook that may have unleased due
 * rows in the table (older rows first: those are the claim's).
 */
import type { Db, Tx } from '../db';
import { whenDurable } from '../db/durable-hooks';
import { writerHandleOf } from '../db/writer';
import type { DeliveryRow } from './deliveries';

/** A delivery written leased to the dispatcher, with the request body its event makes. */
export interface HandedDelivery {
  row: DeliveryRow;
  body: string;
}

export interface DeliveryTaker {
  /** Reserves room for one new row of this webhook; the lease to write on it, or null when it takes none. */
  reserve(webhookId: string): { owner: string; expiresAt: number } | null;
  /**
   * The transaction that wrote the reserved rows settled: `durable` true hands them over (their reservations
   * become queued work), false gives the reservations back.
   */
  settle(handed: HandedDelivery[], durable: boolean): void;
}

const takers = new WeakMap<Db, DeliveryTaker>();

/** The dispatcher of the app whose handle is `db` takes new rows while attached. */
export function attachDeliveryTaker(db: Db, taker: DeliveryTaker): void {
  takers.set(db, taker);
}

export function detachDeliveryTaker(db: Db, taker: DeliveryTaker): void {
  if (takers.get(db) === taker) takers.delete(db);
}

/** The rows each writer transaction hands over when it is durable, per taker. */
const handing = new WeakMap<Tx, { taker: DeliveryTaker; handed: HandedDelivery[] }>();

/** The taker for new rows written in `trx`: only a writer transaction of an app whose dispatcher runs. */
export function takerFor(trx: Tx): DeliveryTaker | undefined {
  const app = writerHandleOf(trx);
  return app && takers.get(app);
}

/**
 * Queues rows written leased to `taker` (reserved through it) for hand-over when `trx` is durable; the first
 * rows of a transaction register its one hook. `taker` came from takerFor(trx), so `trx` is a writer's.
 */
export function handWhenDurable(trx: Tx, taker: DeliveryTaker, deliveries: HandedDelivery[]): void {
  let entry = handing.get(trx);
  if (!entry || entry.taker !== taker) {
    const opened = { taker, handed: [] as HandedDelivery[] };
    if (!whenDurable(trx, (durable) => opened.taker.settle(opened.handed, durable))) {
      taker.settle(deliveries, false); // cannot happen (takerFor found the writer); never leave a reservation open
      throw new Error('webhook hand-over outside a writer transaction');
    }
    handing.set(trx, (entry = opened));
  }
  entry.handed.push(...deliveries);
}
