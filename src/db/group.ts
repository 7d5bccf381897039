/**
 * What one writer transaction holds (writer.ts): plain work, run in the order it
 * came, and items of batch kinds, each kind run once with all its items.
 */
import type { Tx } from './index';

export type Work<T> = (trx: Tx) => Promise<T>;

/**
 * Work that goes better many at once: every item of one kind queued for a
 * transaction reaches `run` together (after the plain work of that
 * transaction), so n outcomes can be one UPDATE instead of n. `run` answers
 * each item in order.
 */
export interface BatchKind<I, R> {
  readonly name: string;
  /**
   * How long an idle writer that holds only items of batch kinds waits for more before it starts (the
   * longest of their gatherMs); plain work arriving meanwhile starts it at once. For items no client waits
   * on (delivery outcomes): each commit then carries more of them, and every commit saved is an fsync.
   */
  readonly gatherMs?: number;
  run(trx: Tx, items: I[]): Promise<R[]>;
}

export interface Pending {
  work?: Work<unknown>;
  batch?: { kind: BatchKind<unknown, unknown>; item: unknown };
  weight: number;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

/** Plain work in the order it came, then each batch kind once with all its items; answers in the group's order. */
export async function runGroup(trx: Tx, group: Pending[]): Promise<unknown[]> {
  const out: unknown[] = new Array(group.length);
  const batches = new Map<BatchKind<unknown, unknown>, number[]>();
  for (let i = 0; i < group.length; i++) {
    const { work, batch } = group[i];
    if (work) out[i] = await work(trx);
    else if (batch) {
      const list = batches.get(batch.kind);
      if (list) list.push(i);
      else batches.set(batch.kind, [i]);
    }
  }
  for (const [kind, indexes] of batches) {
    const answers = await kind.run(trx, indexes.map((i) => group[i].batch!.item));
    indexes.forEach((i, j) => (out[i] = answers[j]));
  }
  return out;
}
