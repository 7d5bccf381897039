/**
 * Where DKIM signatures are made. The benchmark (bench/delivery.ts) shows
 * signing at about a quarter of the CPU a message costs end to end (mailauth
 * parses the PEM key again for every signature), so it runs on
 * `delivery.signingThreads` worker threads, leaving the main thread to the API
 * and SMTP. 0 signs on the main thread. A worker that dies is replaced; the
 * message it was signing is signed on the main thread instead.
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { signMessage, type SigningKey, type SignResult } from './dkim';

export interface Signer {
  sign(raw: Buffer, key: SigningKey, now: number): Promise<SignResult>;
  close(): Promise<void>;
}

type Pending = { resolve: (r: SignResult) => void; fallback: () => void };

interface Slot {
  worker?: Worker;
  pending: Map<number, Pending>;
}

export function createSigner(threads: number): Signer {
  if (threads <= 0) return { sign: signMessage, close: async () => {} };
  const slots: Slot[] = Array.from({ length: threads }, () => ({ pending: new Map() }));
  let nextId = 0;

  const start = (slot: Slot): Worker => {
    const worker = new Worker(path.join(__dirname, 'sign-worker.js'));
    worker.unref(); // an idle signer never keeps the process alive
    worker.on('message', (msg: { id: number; result: SignResult }) => {
      const p = slot.pending.get(msg.id);
      slot.pending.delete(msg.id);
      p?.resolve(deserialize(msg.result));
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

  return {
    sign(raw, key, now) {
      const id = nextId++;
      const slot = slots[id % threads];
      const worker = slot.worker ?? start(slot);
      return new Promise((resolve) => {
        slot.pending.set(id, { resolve, fallback: () => void signMessage(raw, key, now).then(resolve) });
        worker.postMessage({ id, raw, key, now });
      });
    },
    async close() {
      await Promise.all(slots.map((s) => s.worker?.terminate()));
    },
  };
}

/** Buffers cross the thread boundary as plain Uint8Arrays. */
function deserialize(result: SignResult): SignResult {
  if ('error' in result) return result;
  const raw = result.raw as Uint8Array;
  return { raw: Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength), note: result.note };
}
