/**
 * Where DKIM signatures are made. Signing is the largest share of the CPU a
 * message costs on its way out, so it runs on `delivery.signingThreads` worker
 * threads (auto: one per core), leaving the main thread to the API, SMTP and
 * the database. 0 signs on the main thread. Each thread parses a key once
 * (dkim.ts); only the signature lines travel back. A worker that dies is
 * replaced at the next signature; the messages it was signing are signed on
 * the main thread instead.
 */
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { makeSignatures, signMessage, withSignatures, type SigningKey, type SignResult, type Signatures } from './dkim';

export interface Signer {
  sign(raw: Buffer, key: SigningKey, now: number): Promise<SignResult>;
  close(): Promise<void>;
}

type Pending = { resolve: (r: SignResult) => void; raw: Buffer; fallback: () => void };

interface Slot {
  worker?: Worker;
  pending: Map<number, Pending>;
}

/** `auto` → one thread per core (at most 16, the config's bound). */
export function signingThreadCount(threads: number | 'auto'): number {
  return threads === 'auto' ? Math.min(16, os.availableParallelism()) : threads;
}

export function createSigner(setting: number | 'auto'): Signer {
  const threads = signingThreadCount(setting);
  if (threads <= 0) return { sign: signMessage, close: async () => {} };
  const slots: Slot[] = Array.from({ length: threads }, () => ({ pending: new Map() }));
  let nextId = 0;

  const start = (slot: Slot): Worker => {
    const worker = new Worker(path.join(__dirname, 'sign-worker.js'));
    worker.unref(); // an idle signer never keeps the process alive
    worker.on('message', (msg: { id: number; made: Signatures }) => {
      const p = slot.pending.get(msg.id);
      slot.pending.delete(msg.id);
      p?.resolve(withSignatures(p.raw, msg.made));
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

  return {
    sign(raw, key, now) {
      const id = nextId++;
      const slot = pick();
      const worker = slot.worker ?? start(slot);
      return new Promise((resolve) => {
        slot.pending.set(id, { resolve, raw, fallback: () => resolve(withSignatures(raw, makeSignatures(raw, key, now))) });
        worker.postMessage({ id, raw, key, now });
      });
    },
    async close() {
      await Promise.all(slots.map((s) => s.worker?.terminate()));
    },
  };
}
