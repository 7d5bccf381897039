/**
 * Where the send API's MIME is built. Building a message (nodemailer's
 * MailComposer: header encoding, quoted-printable, the stream that joins the
 * parts) is the largest share of the main thread's work per send, ~65 µs of
 * ~370 for a 5 KB text message, and the main thread is what limits how many
 * sends a second the appliance accepts. So it runs on `messages.mimeThreads`
 * worker threads (mime-worker.ts; auto: one fewer than the cores, at least one,
 * at most four), and 0 builds on the main thread. The bytes are the same on
 * either: the worker runs the same composeMime.
 *
 * Like the signer (delivery/signer.ts), the requests of one event-loop turn
 * travel to a thread as one message and come back as one, so a burst wakes
 * each thread once per turn. The threads keep the process's priority: a
 * request waits on its MIME (a lowered thread would get a tenth of a core
 * while the main thread is busy). A thread that dies is replaced at the next
 * request, and the messages it held are built on the main thread instead;
 * after stop() everything is built on the main thread. Pending requests are
 * bounded by the requests in flight, which the HTTP and SMTP listeners bound.
 */
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { AppDeps } from '../deps';
import { composeMime, type MimeInput } from './mime';

/** A thread answers a batch at once: a bound keeps the first of a batch from waiting long for the last. */
const MAX_BATCH = 16;

/** What a thread is asked, and answers, per message (mime-worker.ts). */
export interface MimeRequest {
  id: number;
  input: MimeInput;
}
export type MimeAnswer = { id: number; raw: Uint8Array } | { id: number; error: string };

interface Pending {
  input: MimeInput;
  resolve(raw: Buffer): void;
  reject(err: Error): void;
}

interface Slot {
  worker?: Worker;
  pending: Map<number, Pending>;
  /** requests of this turn, posted together when the turn ends */
  outbox: MimeRequest[];
}

/** `auto` → one thread fewer than the cores (the main thread keeps one), at least 1 and at most 4. */
export function mimeThreadCount(threads: number | 'auto'): number {
  return threads === 'auto' ? Math.max(1, Math.min(4, os.availableParallelism() - 1)) : threads;
}

/** A Buffer over bytes that crossed a thread boundary (structured clone hands over a plain Uint8Array). */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export class MimePool {
  readonly name = 'mime-builder';
  private readonly slots: Slot[];
  private nextId = 0;
  private closed = false;

  constructor(threads: number | 'auto') {
    this.slots = Array.from({ length: mimeThreadCount(threads) }, () => ({ pending: new Map(), outbox: [] }));
  }

  /** Threads running now (they start on the first message). */
  get liveThreads(): number {
    return this.slots.filter((s) => s.worker).length;
  }

  start(): void {} // threads start lazily, on the first send

  async stop(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.map((slot) => {
      const worker = slot.worker;
      slot.worker = undefined;
      this.buildHere(slot);
      return worker?.terminate();
    }));
  }

  compose(input: MimeInput): Promise<Buffer> {
    if (this.closed || this.slots.length === 0) return composeMime(input);
    const slot = this.slots.reduce((best, s) => (s.pending.size < best.pending.size ? s : best));
    const id = this.nextId++;
    return new Promise<Buffer>((resolve, reject) => {
      slot.pending.set(id, { input, resolve, reject });
      const queued = slot.outbox.push({ id, input });
      if (queued === MAX_BATCH) this.flush(slot);
      else if (queued === 1) setImmediate(() => this.flush(slot));
    });
  }

  private flush(slot: Slot): void {
    if (slot.outbox.length === 0 || this.closed) return;
    const batch = slot.outbox;
    slot.outbox = [];
    (slot.worker ?? this.spawn(slot)).postMessage(batch);
  }

  private spawn(slot: Slot): Worker {
    const worker = new Worker(path.join(__dirname, 'mime-worker.js'));
    worker.unref(); // an idle builder never keeps the process alive
    worker.on('message', (answers: MimeAnswer[]) => {
      for (const answer of answers) {
        const p = slot.pending.get(answer.id);
        slot.pending.delete(answer.id);
        if (!p) continue;
        if ('raw' in answer) p.resolve(asBuffer(answer.raw));
        else p.reject(new Error(answer.error));
      }
    });
    worker.on('error', () => undefined); // 'exit' follows and cleans up
    worker.on('exit', () => {
      if (slot.worker !== worker) return;
      slot.worker = undefined;
      this.buildHere(slot);
    });
    slot.worker = worker;
    return worker;
  }

  /** Builds on the main thread what a slot's thread held or had not been sent yet (its thread ended). */
  private buildHere(slot: Slot): void {
    const orphans = [...slot.pending.values()];
    slot.pending.clear();
    slot.outbox = [];
    for (const p of orphans) composeMime(p.input).then(p.resolve, p.reject);
  }
}

/** Each app has its own pool, found from its deps: src/modules.ts gives it to createApp as one of its workers. */
const pools = new WeakMap<AppDeps, MimePool>();

export function mimePoolOf(deps: AppDeps): MimePool {
  let pool = pools.get(deps);
  if (!pool) pools.set(deps, (pool = new MimePool(deps.config.messages.mimeThreads)));
  return pool;
}
