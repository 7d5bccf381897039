/**
 * Where the send API's MIME is built. Building a message (nodemailer's
 * MailComposer: header encoding, quoted-printable or base64, the parts
 * joined in one pass, mime.ts) costs ~45–95 µs for a 5 KB text message
 * and 86–144 ms at a stretch for one with a 7 MB attachment, time in which no
 * other request, SMTP session or delivery moves on the main thread. So it runs on
 * `messages.mimeThreads` worker threads (mime-worker.ts; auto: one fewer than
 * the cores, at least one, at most four), and 0 builds on the main thread.
 * The bytes are the same on either: the thread runs the same composeMime.
 *
 * Like the signer (delivery/signer.ts), the requests of one event-loop turn
 * travel to a thread as one message, so a burst wakes each thread once per
 * turn; the thread answers each message as soon as it is built (answers done
 * in one of its turns travel together), so a small send is not held up by a
 * large one beside it. The next message goes to the thread with the fewest
 * bytes in hand. The threads keep the process's priority: a request waits on
 * its MIME (a lowered thread would get a tenth of a core while the main
 * thread is busy).
 *
 * A thread that ends unexpectedly (it never should: it catches each build's
 * error), cannot start or cannot take a batch is logged; the messages its
 * slot held are built on the main thread, and the slot rests for
 * RESPAWN_DELAY_MS before a new thread starts, so a thread that cannot start
 * does not cost a start per send. At stop() the threads
 * finish what they hold (up to STOP_WAIT_MS); later sends build on the main
 * thread. What waits here is the parts of sends in flight, each within the
 * request body limit: the same bytes the requests hold anyway.
 */
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { AppDeps } from '../deps';
import { composeMime, partBytes, type MimeInput } from './mime';

/** Requests posted at once at most: a turn's burst goes in a few messages rather than one huge one. */
const MAX_BATCH = 16;
/** A slot whose thread failed starts no new one for this long (its sends go to others or build here). */
const RESPAWN_DELAY_MS = 1000;
/** How long stop() lets the threads finish what they hold before it builds the rest here. */
const STOP_WAIT_MS = 2000;
/** A thread's heap; the message bytes themselves live outside it. */
const THREAD_HEAP_MB = 512;

/** What a thread is asked, and answers, per message (mime-worker.ts). */
export interface MimeRequest {
  id: number;
  input: MimeInput;
}
export type MimeAnswer = { id: number; raw: Uint8Array } | { id: number; error: string };

interface Pending {
  input: MimeInput;
  bytes: number;
  resolve(raw: Buffer): void;
  reject(err: Error): void;
}

interface Slot {
  worker?: Worker;
  pending: Map<number, Pending>;
  /** bytes of the parts in `pending`: the next message goes to the slot with the fewest */
  bytes: number;
  /** requests of this turn, posted together when the turn ends */
  outbox: MimeRequest[];
  /** no new thread before this time (ms, performance.now()) after one ended unexpectedly */
  restUntil: number;
  /** called when `pending` empties (stop() waits on it) */
  onDrained?: () => void;
}

/** `auto` → one thread fewer than the cores (the main thread keeps one), at least 1 and at most 4. */
export function mimeThreadCount(threads: number | 'auto'): number {
  return threads === 'auto' ? Math.max(1, Math.min(4, os.availableParallelism() - 1)) : threads;
}

/** A Buffer over bytes that crossed a thread boundary (structured clone hands over a plain Uint8Array). */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export interface MimePoolOptions {
  /** A thread failed (ended, or could not start or take a batch) with `orphans` messages in hand, built here. */
  onThreadFailure?(reason: string, orphans: number): void;
  /** ms a failed slot rests (tests) */
  respawnDelayMs?: number;
}

export class MimePool {
  readonly name = 'mime-builder';
  readonly servesRequests = true;
  private readonly slots: Slot[];
  private nextId = 0;
  private closed = false;
  private here = 0;

  constructor(threads: number | 'auto', private readonly options: MimePoolOptions = {}) {
    this.slots = Array.from({ length: mimeThreadCount(threads) }, () => ({ pending: new Map(), bytes: 0, outbox: [], restUntil: 0 }));
  }

  /** Messages built on the main thread so far: with threads, only those of a failed thread or after stop(). */
  get builtHere(): number {
    return this.here;
  }

  /** Threads running now (they start on the first message). */
  get liveThreads(): number {
    return this.slots.filter((s) => s.worker).length;
  }

  start(): void {} // threads start lazily, on the first send

  async stop(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.map(async (slot) => {
      this.flush(slot);
      if (slot.pending.size) {
        let timer: NodeJS.Timeout | undefined;
        await new Promise<void>((resolve) => {
          slot.onDrained = resolve;
          timer = setTimeout(resolve, STOP_WAIT_MS);
        });
        clearTimeout(timer);
      }
      const worker = slot.worker;
      slot.worker = undefined;
      this.buildHere(slot);
      await worker?.terminate();
    }));
  }

  compose(input: MimeInput): Promise<Buffer> {
    const slot = this.closed ? undefined : this.pick();
    if (!slot) return this.composeHere(input);
    const id = this.nextId++;
    const bytes = partBytes(input);
    return new Promise<Buffer>((resolve, reject) => {
      slot.pending.set(id, { input, bytes, resolve, reject });
      slot.bytes += bytes;
      const queued = slot.outbox.push({ id, input });
      if (queued === MAX_BATCH) this.flush(slot);
      else if (queued === 1) setImmediate(() => this.flush(slot));
    });
  }

  /** The slot with the fewest bytes in hand among those not resting; none when all rest. */
  private pick(): Slot | undefined {
    const now = performance.now();
    let best: Slot | undefined;
    for (const s of this.slots) if (s.restUntil <= now && (!best || s.bytes < best.bytes)) best = s;
    return best;
  }

  private flush(slot: Slot): void {
    if (slot.outbox.length === 0) return;
    const batch = slot.outbox;
    slot.outbox = [];
    try {
      const worker = slot.worker ?? (this.closed ? undefined : this.spawn(slot));
      if (!worker) return this.buildHere(slot);
      worker.postMessage(batch);
    } catch (err) {
      // A thread that cannot start or take the batch: it is ended, and this one builds all the slot holds (answers
      // the thread still sends find nothing pending).
      const worker = slot.worker;
      slot.worker = undefined;
      void worker?.terminate();
      this.fail(slot, String((err as Error)?.message ?? err));
    }
  }

  private spawn(slot: Slot): Worker {
    const worker = new Worker(path.join(__dirname, 'mime-worker.js'), { resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB } });
    worker.unref(); // an idle builder never keeps the process alive
    worker.on('message', (answers: MimeAnswer[]) => {
      for (const answer of answers) this.settle(slot, answer);
    });
    let error: unknown;
    worker.on('error', (err) => (error = err)); // 'exit' follows and cleans up
    worker.on('exit', (code) => {
      if (slot.worker !== worker) return; // stop() or a failed post ended it
      slot.worker = undefined;
      this.fail(slot, error === undefined ? `exit code ${code}` : String((error as Error)?.message ?? error));
    });
    slot.worker = worker;
    return worker;
  }

  private settle(slot: Slot, answer: MimeAnswer): void {
    const p = slot.pending.get(answer.id);
    if (!p) return;
    this.forget(slot, answer.id, p);
    if ('raw' in answer) p.resolve(asBuffer(answer.raw));
    else p.reject(new Error(answer.error));
  }

  private forget(slot: Slot, id: number, p: Pending): void {
    slot.pending.delete(id);
    slot.bytes -= p.bytes;
    if (slot.pending.size === 0) slot.onDrained?.();
  }

  /** The slot's thread failed: what it held is built here first, then the slot rests and the failure is told. */
  private fail(slot: Slot, reason: string): void {
    const orphans = slot.pending.size;
    this.buildHere(slot);
    slot.restUntil = performance.now() + (this.options.respawnDelayMs ?? RESPAWN_DELAY_MS);
    this.options.onThreadFailure?.(reason, orphans);
  }

  /** Builds on the main thread what a slot holds, posted or not (its thread failed, or stop() is done waiting). */
  private buildHere(slot: Slot): void {
    slot.outbox = [];
    for (const [id, p] of [...slot.pending]) {
      this.forget(slot, id, p);
      this.composeHere(p.input).then(p.resolve, p.reject);
    }
  }

  private composeHere(input: MimeInput): Promise<Buffer> {
    this.here++;
    return composeMime(input);
  }
}

/** Each app has its own pool, found from its deps: src/modules.ts gives it to createApp as one of its workers. */
const pools = new WeakMap<AppDeps, MimePool>();

export function mimePoolOf(deps: AppDeps): MimePool {
  let pool = pools.get(deps);
  if (!pool) {
    const onThreadFailure = (reason: string, orphans: number) =>
      deps.log.warn({ reason, orphans }, 'a MIME builder thread failed; its messages are built on the main thread');
    pools.set(deps, (pool = new MimePool(deps.config.messages.mimeThreads, { onThreadFailure })));
  }
  return pool;
}
