/**
 * Worker threads that compile large templates (compile-worker.ts), so that
 * Handlebars' lexer, parser and compiler — hundreds of milliseconds for a
 * source at the size bound — never run on the main thread, which serves the
 * API and SMTP. render.ts sends them only sources too large to compile
 * inline in a few milliseconds.
 *
 * Bounded everywhere: one compile at a time per thread; at most
 * MAX_PER_ACCOUNT compiles waiting or running per account (429, so one
 * account cannot fill the queue for everyone) and MAX_QUEUED waiting in all
 * (503: the appliance, not the caller, is busy); a compile running longer
 * than TIMEOUT_MS has its thread terminated and replaced and is refused as
 * too expensive. Threads start on first use, never keep the process alive,
 * and end when the app closes (the pool is one of the app's workers).
 */
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { AppDeps } from '../deps';
import { ApiError } from '../http/errors';
import type { CompileAnswer, CompileRequest } from './compile-worker';

export interface PoolLimits {
  threads: number;
  maxQueued: number;
  maxPerAccount: number;
  timeoutMs: number;
}

export const POOL_LIMITS: PoolLimits = {
  // Leave a core to the main thread; two threads are plenty for compiles that are cached once done.
  threads: Math.max(1, Math.min(2, os.availableParallelism() - 1)),
  maxQueued: 32,
  maxPerAccount: 4,
  // A compile at the source bounds takes well under a second even on a busy machine.
  timeoutMs: 5_000,
};

/** A compile that ran past the timeout: render.ts answers 422 template_error. */
export class CompileTimeout extends Error {}

interface Job {
  request: CompileRequest;
  account: string;
  resolve(spec: string): void;
  reject(err: Error): void;
}

interface Slot {
  worker?: Worker;
  job?: Job;
  timer?: NodeJS.Timeout;
}

const retryLater = { 'Retry-After': '1' };
const shuttingDown = () => new ApiError(503, 'api_error', 'shutting_down', 'the appliance is shutting down; retry shortly', undefined, undefined, retryLater);

export class CompilePool {
  readonly name = 'template-compiler';
  readonly servesRequests = true;
  private readonly slots: Slot[];
  private readonly queue: Job[] = [];
  private readonly perAccount = new Map<string, number>();
  private closed = false;

  constructor(private readonly limits: PoolLimits = POOL_LIMITS) {
    this.slots = Array.from({ length: limits.threads }, () => ({}));
  }

  /** False once the app is closing: render.ts then compiles on the main thread. */
  get open(): boolean {
    return !this.closed;
  }

  /** Threads running now (they start on the first compile). */
  get liveThreads(): number {
    return this.slots.filter((s) => s.worker).length;
  }

  start(): void {} // threads start lazily, on the first large template

  /** Throws at once, before any work, when closed or when this account or the whole pool has too many compiles pending. */
  precompile(request: CompileRequest, account: string): Promise<string> {
    if (this.closed) throw shuttingDown();
    const mine = this.perAccount.get(account) ?? 0;
    if (mine >= this.limits.maxPerAccount) {
      throw new ApiError(429, 'rate_limit_error', 'too_many_compiles',
        `this account already has ${mine} large templates compiling; send them one after another`, undefined, undefined, retryLater);
    }
    if (this.queue.length >= this.limits.maxQueued) {
      throw new ApiError(503, 'api_error', 'compiler_busy', 'too many large templates are compiling; retry shortly', undefined, undefined, retryLater);
    }
    this.perAccount.set(account, mine + 1);
    return new Promise<string>((resolve, reject) => {
      this.queue.push({ request, account, resolve, reject });
      this.dispatch();
    });
  }

  async stop(): Promise<void> {
    this.closed = true;
    const shutdown = shuttingDown();
    for (const job of this.queue.splice(0)) this.finish(job, () => job.reject(shutdown));
    await Promise.all(this.slots.map((slot) => {
      const { worker, job } = slot;
      this.release(slot);
      if (job) this.finish(job, () => job.reject(shutdown));
      return worker?.terminate();
    }));
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (this.queue.length === 0) return;
      if (slot.job) continue;
      const job = this.queue.shift() as Job;
      slot.job = job;
      slot.timer = setTimeout(() => this.expire(slot), this.limits.timeoutMs).unref();
      (slot.worker ?? this.spawn(slot)).postMessage(job.request);
    }
  }

  private spawn(slot: Slot): Worker {
    // A compile that would need more memory than this ends its thread, not the appliance.
    const worker = new Worker(path.join(__dirname, 'compile-worker.js'), { resourceLimits: { maxOldGenerationSizeMb: 256 } });
    worker.unref(); // an idle compiler never keeps the process alive
    worker.on('message', (answer: CompileAnswer) => {
      if (slot.worker === worker) this.answer(slot, answer);
    });
    worker.on('error', () => undefined); // 'exit' follows
    worker.on('exit', () => {
      if (slot.worker === worker) this.answer(slot, { error: 'the template compiler stopped unexpectedly' }, true);
    });
    slot.worker = worker;
    return worker;
  }

  /** A compile that takes too long: its thread is terminated and the next compile gets a fresh one. */
  private expire(slot: Slot): void {
    const { worker, job } = slot;
    this.release(slot);
    void worker?.terminate();
    if (job) this.finish(job, () => job.reject(new CompileTimeout('too expensive to compile')));
    this.dispatch();
  }

  private answer(slot: Slot, answer: CompileAnswer, exited = false): void {
    const job = slot.job;
    clearTimeout(slot.timer);
    slot.job = undefined;
    slot.timer = undefined;
    if (exited) slot.worker = undefined;
    if (job) this.finish(job, () => ('spec' in answer ? job.resolve(answer.spec) : job.reject(new Error(answer.error))));
    this.dispatch();
  }

  /** Forgets the slot's thread and job (the caller settles the job and ends the thread). */
  private release(slot: Slot): void {
    clearTimeout(slot.timer);
    slot.worker = undefined;
    slot.job = undefined;
    slot.timer = undefined;
  }

  private finish(job: Job, settle: () => void): void {
    const left = (this.perAccount.get(job.account) ?? 1) - 1;
    if (left > 0) this.perAccount.set(job.account, left);
    else this.perAccount.delete(job.account);
    settle();
  }
}

/**
 * Each app has its own pool, found from its deps: the messages module gives
 * it to createApp as one of the app's workers, so close() terminates its
 * threads, and the send and template routes compile through it.
 */
const pools = new WeakMap<AppDeps, CompilePool>();

export function compilePoolOf(deps: AppDeps): CompilePool {
  let pool = pools.get(deps);
  if (!pool) pools.set(deps, (pool = new CompilePool()));
  return pool;
}
