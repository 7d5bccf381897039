/**
 * Fresh sends reach the MTA in memory. When the accept path is about to write
 * copies that are due at once, it asks the MTA (if one runs in this process
 * and has free slots) to take some: those rows are written already leased to
 * the MTA (`sending`, its lease owner and expiry), in the accept transaction
 * itself, and handed over once that transaction committed. A fresh message
 * then costs no claim statement and no wait for the next writer turn between
 * its 202 and its first SMTP connection.
 *
 * Nothing lives only in memory: the row is durable and leased like any
 * claimed row, so after a crash the start-up release returns it to the queue,
 * and if the MTA cannot take it (stopping), the lease lapses and a claim
 * picks it up.
 *
 * With several nodes on one database, the MTA takes only copies this node
 * can send (pools/node-scope.ts): a send for a pool whose addresses are on
 * another node is written queued, for that node's claim.
 */
import type { SendFacts } from '../pools/node-scope';

export interface Lease {
  owner: string;
  expiresAt: number;
}

/** Copies the MTA agreed to take from one accepted batch. */
export interface Grant extends Lease {
  /** at most this many copies */
  count: number;
  /** whether a copy to this recipient domain may be taken (not to a destination an operator paused) */
  takes(recipientDomain: string): boolean;
  /** After the commit: the leased rows as written, and the batch's content bytes by content id. */
  hand(rows: ReadonlyArray<Record<string, unknown>>, contents: ReadonlyMap<string, Buffer>): void;
  /** The batch was not written (its transaction failed): the slots are free again. */
  cancel(): void;
}

export interface HandoffTaker {
  /** Up to `wanted` free slots for copies due now of a batch with these facts, or null when it takes none. */
  reserve(wanted: number, now: number, batch: SendFacts): Promise<Grant | null>;
}

/** The meeting point in AppDeps: the MTA attaches itself while it runs; the accept path asks it. */
export class Handoff {
  private taker: HandoffTaker | null = null;

  attach(taker: HandoffTaker): void {
    this.taker = taker;
  }

  detach(taker: HandoffTaker): void {
    if (this.taker === taker) this.taker = null;
  }

  async reserve(wanted: number, now: number, batch: SendFacts): Promise<Grant | null> {
    return wanted > 0 && this.taker ? this.taker.reserve(wanted, now, batch) : null;
  }
}
