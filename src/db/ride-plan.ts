/**
 * Which of a transaction's kept writes (buffer.ts) ride with the COMMIT on
 * SQLite (commit-batch.ts), and which go out first as bound statements, in
 * the foreign-key waves of write-order.ts.
 */
import { newBlobBudget, type BlobBudget } from './sql-values';
import type { TableWrite } from './write-order';

/** A write of the buffer: its rows, run as statements, or written into SQL text to ride. */
export interface BufferedWrite extends TableWrite {
  run(): Promise<void>;
  /**
   * SQLite: the write as complete statements with their values in the text, or undefined when a value must be
   * bound; blobs take their bytes from `budget` (sql-values.ts)
   */
  literal(budget: BlobBudget): string[] | undefined;
}

/** How a transaction's kept writes go out on SQLite: some bound, in waves, then the rest with the COMMIT. */
export interface RidingPlan {
  /** waves sent as statements of their own, in order; the last may be part of a wave whose rest rides */
  bound: BufferedWrite[][];
  /** the writes that ride, by wave (run as statements, in this order, when riding is refused) */
  ridden: BufferedWrite[][];
  /** their statements, in wave order */
  statements: string[];
}

/**
 * SQLite: which writes ride with the COMMIT (commit-batch.ts), from the last wave back: every write whose values
 * can all be written in its text, until a wave holds one that cannot. That wave's other writes ride too (a wave's
 * writes do not refer to each other, and the ridden text runs after the bound statements); the waves before it
 * are bound. Blobs ride only within a small budget per transaction (message contents: as hex text a large
 * group's cost the main thread more to build and hand over than the trip saved), so a small group of accepts is
 * one trip, and a large one sends its contents as a statement, then the rest (messages, events, counters) with
 * the COMMIT.
 */
export function planRiding(waves: readonly BufferedWrite[][]): RidingPlan {
  const budget = newBlobBudget();
  const ridden: BufferedWrite[][] = [];
  const statements: string[][] = [];
  for (let i = waves.length - 1; i >= 0; i--) {
    const rides: BufferedWrite[] = [];
    const stays: BufferedWrite[] = [];
    const texts: string[] = [];
    for (const write of waves[i]) {
      const literal = write.literal(budget);
      if (literal) {
        rides.push(write);
        texts.push(...literal);
      } else stays.push(write);
    }
    if (rides.length) {
      ridden.unshift(rides);
      statements.unshift(texts);
    }
    if (stays.length) return { bound: [...waves.slice(0, i), stays], ridden, statements: statements.flat() };
  }
  return { bound: [], ridden, statements: statements.flat() };
}
