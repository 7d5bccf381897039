/**
 * Where the dispatcher's requests are made: on a worker thread of their own
 * (send-worker.ts). An attempt costs the thread that makes it ~0.2 ms (the
 * guard, the HMAC, node's HTTP client, and on loopback the receiver's wake-up
 * inside the socket write), which on the main thread was time no accept,
 * SMTP session or delivery moved in: one webhook on every event took a third
 * of it while mail flowed at full speed (docs/benchmarks.md). The main thread
 * now only posts the attempt and records its outcome.
 *
 * The attempts of one event-loop turn travel to the thread as one message,
 * and its answers of one turn come back together. A thread that ends
 * unexpectedly (it never should: every attempt's error becomes an outcome)
 * or cannot take a message is logged; what it held is attempted again on the
 * main thread (at least once: it may have been sent already), as is every
 * attempt for RESPAWN_DELAY_MS; later ones wait until those are over, then go
 * to a new thread, so the request limits hold on one side at a time.
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Config } from '../config';
import { EndpointAgents, type AgentOptions } from './agents';
import { attemptDelivery, type AttemptInput } from './attempt';
import { LaneGate } from './lane-gate';
import type { SendOutcome } from './sender';

/** What the thread starts with. */
export interface SenderData {
  config: Pick<Config, 'dns' | 'webhooks'>;
  agents: AgentOptions;
}
/** An attempt and its lane (the webhook): the thread runs `perWebhookConcurrency` of a lane at once (lane-gate.ts). */
export type SendRequest = { id: number; lane: string; input: Omit<AttemptInput, 'signal'> } | { abort: number };
export type SendAnswer = { id: number; outcome: SendOutcome } | { id: number; error: string };

/** What an attempt that waited and was aborted before it started answers: not an attempt at all. */
export const NOT_STARTED: SendOutcome = { success: false, statusCode: null, latencyMs: 0, responseBody: null, error: 'aborted', aborted: true };

/** The limits of requests in flight, where they are made. */
export function laneGate(config: SenderData['config']): LaneGate {
  return new LaneGate(config.webhooks.perWebhookConcurrency, config.webhooks.concurrency);
}

/**
 * An attempt made under `gate`, over `agents`. One that waited for its turn is signed with the time it starts
 * (`now` moved on by the wait) and tells the wait, so its recorded time is when it was made. One that started
 * at once keeps its `now` exactly (a test's clock is not moved by the real time a message takes to get here).
 */
export function gatedAttempt(gate: LaneGate, data: SenderData, agents: EndpointAgents, lane: string, input: AttemptInput): Promise<SendOutcome> {
  const asked = performance.now();
  return gate.run(lane, async (waited) => {
    const waitedMs = waited ? Math.round(performance.now() - asked) : 0;
    return { ...(await attemptDelivery(data.config, { ...input, now: input.now + waitedMs }, agents)), waitedMs };
  }, () => NOT_STARTED, input.signal);
}

/** A thread that failed is not started again for this long; its attempts are made here meanwhile. */
const RESPAWN_DELAY_MS = 1000;
/** The thread's heap: request bodies and response prefixes, a few KB each. */
const THREAD_HEAP_MB = 128;

interface Pending {
  lane: string;
  input: AttemptInput;
  /** performance.now() when it was handed to the thread */
  postedAt: number;
  resolve(outcome: SendOutcome): void;
  reject(err: Error): void;
}

export interface SenderOptions {
  /** the thread failed with `orphans` attempts in hand, made again here */
  onThreadFailure?(reason: string, orphans: number): void;
}

export class SenderThread {
  private worker?: Worker;
  private readonly pending = new Map<number, Pending>();
  private outbox: SendRequest[] = [];
  private nextId = 0;
  private restUntil = 0;
  private closed = false;
  /** connections and limits for the attempts made here (a failed thread's, or while it rests) */
  private local?: { agents: EndpointAgents; gate: LaneGate };

  constructor(private readonly data: SenderData, private readonly options: SenderOptions = {}) {}

  /** One attempt of a delivery to webhook `lane`; it waits on the thread while the lane or all are at their limit. */
  attempt(lane: string, input: AttemptInput): Promise<SendOutcome> {
    if (input.signal?.aborted) return Promise.resolve(NOT_STARTED);
    if (this.closed || performance.now() < this.restUntil) return this.attemptHere(lane, input);
    const id = this.nextId++;
    const { signal, ...posted } = input;
    return new Promise<SendOutcome>((resolve, reject) => {
      this.pending.set(id, { lane, input, postedAt: performance.now(), resolve, reject });
      signal?.addEventListener('abort', () => this.pending.has(id) && this.post({ abort: id }), { once: true });
      this.post({ id, lane, input: posted });
    });
  }

  /** Ends the thread and the connections; the dispatcher has settled (or aborted) every attempt first. */
  async destroy(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    this.orphan(); // none in practice; made here rather than lost
    this.local?.agents.destroy();
    await worker?.terminate();
  }

  private post(request: SendRequest): void {
    if (this.outbox.push(request) === 1) setImmediate(() => this.flush());
  }

  private flush(): void {
    // After a failure, requests made here run out before the next thread gets any: the limits hold on one side
    // at a time. Meanwhile new ones wait in the outbox.
    if (this.local && !this.local.gate.idle) return this.local.gate.whenIdle(() => this.flush());
    const batch = this.outbox;
    this.outbox = [];
    if (!batch.length) return;
    try {
      const worker = this.worker ?? (this.closed ? undefined : this.spawn());
      if (!worker) return this.orphan();
      worker.postMessage(batch);
    } catch (err) {
      this.fail(String((err as Error)?.message ?? err));
    }
  }

  private spawn(): Worker {
    const worker = new Worker(path.join(__dirname, 'send-worker.js'), { workerData: this.data, resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB } });
    worker.unref(); // an idle sender never keeps the process alive
    worker.on('message', (answers: SendAnswer[]) => answers.forEach((a) => this.settle(a)));
    worker.on('messageerror', (err) => {
      if (this.worker === worker) this.fail(`an answer could not be read: ${err.message}`); // its attempts are lost with it
    });
    let error: unknown;
    worker.on('error', (err) => (error = err)); // 'exit' follows
    worker.on('exit', (code) => {
      if (this.worker !== worker) return; // destroy() or a failed post ended it
      this.worker = undefined;
      this.fail(error === undefined ? `exit code ${code}` : String((error as Error)?.message ?? error));
    });
    this.worker = worker;
    return worker;
  }

  private settle(answer: SendAnswer): void {
    const p = this.pending.get(answer.id);
    if (!p) return;
    this.pending.delete(answer.id);
    if ('outcome' in answer) p.resolve(answer.outcome);
    else p.reject(new Error(answer.error));
  }

  /** The thread failed: it is ended, what it held is attempted here, and the next second's attempts too. */
  private fail(reason: string): void {
    const worker = this.worker;
    this.worker = undefined;
    void worker?.terminate();
    this.restUntil = performance.now() + RESPAWN_DELAY_MS;
    this.options.onThreadFailure?.(reason, this.pending.size);
    this.orphan();
  }

  /** Makes here every attempt posted or held (its thread is gone). */
  private orphan(): void {
    this.outbox = [];
    for (const [id, p] of [...this.pending]) {
      this.pending.delete(id);
      // made now: signed and recorded with the time it starts here, as a request that waited its turn is
      const waited = Math.round(performance.now() - p.postedAt);
      this.attemptHere(p.lane, { ...p.input, now: p.input.now + waited })
        .then((outcome) => ({ ...outcome, waitedMs: (outcome.waitedMs ?? 0) + waited }))
        .then(p.resolve, p.reject);
    }
  }

  private attemptHere(lane: string, input: AttemptInput): Promise<SendOutcome> {
    this.local ??= { agents: new EndpointAgents(this.data.agents), gate: laneGate(this.data.config) };
    return gatedAttempt(this.local.gate, this.data, this.local.agents, lane, input);
  }
}
