/**
 * Where DKIM signatures are made. Signing is the largest share of the CPU a
 * message costs on its way out, so it runs on `delivery.signingThreads` worker
 * threads (auto: one per core), leaving the main thread to the API, SMTP and
 * the database. 0 signs on the main thread. Each thread parses a key once
 * (dkim.ts); only the signature lines travel back. Requests made in one
 * turn of the event loop travel to a thread as one message, and their answers
 * come back as one: a burst of sends wakes each thread once per turn, not
 * once per message (on a busy machine every wake-up is a context switch). A
 * worker that dies is replaced at the next signature; the messages it was
 * signing are signed on the main thread instead.
 */
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { makeSignatures, signMessage, withSignatures, type SigningKey, type SignResult, type Signatures } from './dkim';

export interface Signer {
  sign(raw: Buffer, key: SigningKey, now: number): Promise<SignResult>;
  close(): Promise<void>;
}

/** A thread answers a batch at once: a bound keeps the first of a batch from waiting long for the last. */
const MAX_BATCH = 8;

type Pending = { resolve: (r: SignResult) => void; raw: Buffer; fallback: () => void };

/** What a thread is asked, and answers, per message (sign-worker.ts). */
export interface SignRequest {
  id: number;
  raw: Uint8Array;
  key: SigningKey;
  now: number;
}
export interface SignAnswer {
  id: number;
  made: Signatures;
}

interface Slot {
  worker?: Worker;
  pending: Map<number, Pending>;
  /** requests of this turn, posted together when the turn ends */
  outbox: SignRequest[];
}

/** `auto` → one thread per core (at most 16, the config's bound). */
export function signingThreadCount(threads: number | 'auto'): number {
  return threads === 'auto' ? Math.min(16, os.availableParallelism()) : threads;
}

export function createSigner(setting: number | 'auto'): Signer {
  const threads = signingThreadCount(setting);
  if (threads <= 0) return { sign: signMessage, close: async () => {} };
  const slots: Slot[] = Array.from({ length: threads }, () => ({ pending: new Map(), outbox: [] }));
  let nextId = 0;

  const start = (slot: Slot): Worker => {
    const worker = new Worker(path.join(__dirname, 'sign-worker.js'));
    worker.unref(); // an idle signer never keeps the process alive
    worker.on('message', (answers: SignAnswer[]) => {
      for (const { id, made } of answers) {
        const p = slot.pending.get(id);
        slot.pending.delete(id);
        p?.resolve(withSignatures(p.raw, made));
      }
    });
    worker.on('error', () => undefined); // 'exit' follows and cleans up
    worker.on('exit', () => {
      if (slot.worker === worker) slot.worker = undefined;
      const orphans = [...slot.pending.values()];
      slot.pending.clear();
      for (const p of orphans) p.fallback();
    });
    slot.worker = worker;
    return worker;
  };

  // The least busy thread takes the next message, so a slow or restarting one does not hold a queue.
  const pick = (): Slot => slots.reduce((best, s) => (s.pending.size < best.pending.size ? s : best));
  const flush = (slot: Slot) => {
    const batch = slot.outbox;
    slot.outbox = [];
    (slot.worker ?? start(slot)).postMessage(batch);
  };

  return {
    sign(raw, key, now) {
      const id = nextId++;
      const slot = pick();
      if (!slot.worker) start(slot);
      return new Promise((resolve) => {
        slot.pending.set(id, { resolve, raw, fallback: () => resolve(withSignatures(raw, makeSignatures(raw, key, now))) });
        const queued = slot.outbox.push({ id, raw, key, now });
        if (queued === MAX_BATCH) flush(slot);
        else if (queued === 1) setImmediate(() => slot.outbox.length && flush(slot));
      });
    },
    async close() {
      await Promise.all(slots.map((s) => s.worker?.terminate()));
    },
  };
}
