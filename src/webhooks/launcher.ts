/**
 * The dispatcher's held work and its requests: deliveries it holds the lease
 * on wait in the ready queue (ready.ts), lane by lane, and go to the sender
 * thread as slots (slots.ts) allow, each through attempt-runner.ts. What to
 * claim and when is the dispatcher's business (dispatcher.ts); this side
 * tells it when a slot frees up and when a retry is scheduled.
 */
import { performance } from 'node:perf_hooks';
import type { AppDeps } from '../deps';
import { AttemptRunner } from './attempt-runner';
import { releaseLeases } from './claims';
import type { Delivery } from './deliveries';
import { Job, loadJobs, loadWebhooks } from './jobs';
import { ReadyQueue } from './ready';
import { Slots } from './slots';
import { secretsKey } from './store';

type LauncherDeps = Pick<AppDeps, 'config' | 'db' | 'reader' | 'clock' | 'log' | 'metrics' | 'writer'>;

/**
 * Rounds of requests handed to the sender thread at once: the round in flight and the next. With the round in
 * flight only, every request waited for two trips through the main thread's event loop (the answer, the next
 * request) before the next could start: one webhook on every event kept up with 35 % of the events while mail
 * flowed at full speed (docs/benchmarks.md).
 */
const HANDED_ROUNDS = 2;
/** A queued delivery's webhook is re-read when older than this, so changes reach it. */
const WEBHOOK_FRESH_MS = 1_000;

export interface LauncherEvents {
  /** a slot freed up: queued work may start, and a claim may be wanted */
  slotFreed(): void;
  /** an attempt failed and its retry is due at this time */
  retryAt(at: number): void;
}

export class Launcher {
  private readonly ready = new ReadyQueue();
  private readonly slots: Slots;
  private readonly runner: AttemptRunner;
  /** every started delivery until its result is on disk */
  private readonly unfinished = new Set<Promise<void>>();
  /** deliveries not to be sent after all (aborted by stop, handed over to a stopping dispatcher): leases to give back */
  private readonly toRelease: string[] = [];
  private stopped = false;

  constructor(private readonly deps: LauncherDeps, private readonly owner: string, private readonly events: LauncherEvents) {
    const { concurrency, perWebhookConcurrency } = deps.config.webhooks;
    // The sender thread holds a round more than it may run (lane-gate.ts): a finished request's successor starts
    // there at once, not after a trip through this thread's event loop.
    this.slots = new Slots({ concurrency: concurrency * HANDED_ROUNDS, perWebhookConcurrency: perWebhookConcurrency * HANDED_ROUNDS });
    this.runner = new AttemptRunner(deps, owner);
  }

  /** Deliveries held: queued and in flight. */
  get size(): number {
    return this.ready.size + this.slots.size;
  }

  /** Whether anything is queued or not yet recorded. */
  get busy(): boolean {
    return this.ready.size > 0 || this.unfinished.size > 0;
  }

  /** One webhook's deliveries held. */
  held(webhookId: string): number {
    return this.ready.queued(webhookId) + this.slots.inFlight(webhookId);
  }

  /** Webhooks with deliveries held. */
  webhookIds(): string[] {
    return [...new Set([...this.ready.webhookIds(), ...this.slots.webhookIds()])];
  }

  /** Resolves when every delivery started so far is recorded. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.unfinished]);
  }

  /** Loads claimed rows' jobs (one query on a reader: the claim has committed) and queues them; a paused webhook's go back. */
  async addClaimed(ids: string[]): Promise<void> {
    const { db, reader, config } = this.deps;
    if (!ids.length) return;
    const jobs = await loadJobs(reader, secretsKey(config.dataDir), ids);
    await releaseLeases(db, jobs.filter((j) => !j.webhook.enabled).map((j) => j.delivery.id), this.owner);
    this.ready.add(jobs.filter((j) => j.webhook.enabled), performance.now(), (id) => this.slots.has(id));
  }

  /** Queues deliveries handed over in memory and starts what it can; true when a lane waits for its webhook's read. */
  addHanded(items: Array<{ delivery: Delivery; body: string }>): boolean {
    const unread = this.ready.addHanded(items, (id) => this.slots.has(id));
    this.launchFresh();
    return unread;
  }

  /** Deliveries leased to us not to be sent (handed over to a stopping dispatcher): stop() gives them back. */
  giveBack(ids: string[]): void {
    this.toRelease.push(...ids);
  }

  /**
   * Moves queued jobs into free slots, lane by lane; lanes read over a second ago get their webhook re-read
   * first. A stale lane with room of its own is re-read even when every global slot is taken: freed slots go to
   * fresh lanes at once (launchFresh), so waiting for global room would starve it (a slow endpoint's lane goes
   * stale while its requests are out). Re-read, it is ahead in the turn for the next freed slot.
   */
  async startReady(): Promise<void> {
    const stale = this.ready.webhookIds().filter((id) => this.slots.hasOwnRoom(id) && this.ready.isStale(id, WEBHOOK_FRESH_MS, performance.now()));
    if (stale.length) await this.reread(stale);
    this.launchFresh();
  }

  /** Launches nothing more from now on (the dispatcher's stop, before it waits for a pass under way). */
  halt(): void {
    this.stopped = true;
  }

  /**
   * Stops: no more launches, requests under way aborted (not attempts), and once they are over, every lease
   * held is given back (`pending`: settled first, e.g. hand-overs still under way), so the next start sends them.
   */
  async stop(pending: () => Promise<void>): Promise<void> {
    this.halt();
    this.slots.abortAll();
    await this.settled();
    await pending();
    await releaseLeases(this.deps.db, [...this.ready.clear(), ...this.toRelease.splice(0)], this.owner);
    await this.runner.destroy();
  }

  /**
   * Moves queued jobs of lanes read within the last second into free slots, at once: a finished request's slot
   * is refilled without waiting for the pass in progress (a claim waits its turn at the writer's connection,
   * ~15 ms while mail flows at full speed, and the slots stood idle meanwhile). Stale lanes wait for startReady.
   */
  private launchFresh(): void {
    const now = performance.now();
    for (const id of this.ready.webhookIds()) {
      if (this.stopped || this.slots.full()) return;
      const room = this.slots.room(id);
      if (room > 0 && !this.ready.isStale(id, WEBHOOK_FRESH_MS, now)) for (const job of this.ready.take(id, room)) this.launch(job);
    }
  }

  /** Applies webhook changes to queued jobs: a deleted webhook took its rows along, a paused one's go back. */
  private async reread(webhookIds: string[]): Promise<void> {
    const { db, reader, config } = this.deps;
    const current = await loadWebhooks(reader, secretsKey(config.dataDir), webhookIds);
    const back: string[] = [];
    for (const id of webhookIds) {
      const webhook = current.get(id);
      if (!webhook) this.ready.drop(id);
      else if (!webhook.enabled) back.push(...this.ready.drop(id));
      else this.ready.setWebhook(webhook, performance.now());
    }
    await releaseLeases(db, back, this.owner);
  }

  private launch(job: Job): void {
    const { id, webhookId } = job.delivery;
    const controller = this.slots.take(id, webhookId);
    const freeSlot = () => {
      if (!this.slots.release(id)) return;
      this.launchFresh();
      this.events.slotFreed();
    };
    const done: Promise<void> = this.send(job, controller.signal, freeSlot)
      .catch((err: unknown) => this.deps.log.error({ err, deliveryId: id }, 'webhook attempt failed unexpectedly'))
      .finally(() => {
        freeSlot();
        this.unfinished.delete(done);
      });
    this.unfinished.add(done);
  }

  /** Attempt and record one delivery; the slot is free as soon as the answer is in, before the write. */
  private async send(job: Job, signal: AbortSignal, freeSlot: () => void): Promise<void> {
    const recorded = await this.runner.run(job, signal, freeSlot);
    if (recorded === 'aborted') this.toRelease.push(job.delivery.id);
    else if (recorded?.nextAttemptAt != null) this.events.retryAt(recorded.nextAttemptAt);
  }
}
