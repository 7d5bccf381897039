/**
 * The webhook dispatcher: the last stage of the event fan-out. It claims due
 * delivery rows with a lease, sends each (attempt.ts) and records the outcome
 * (deliveries.ts), which also schedules the retry. It is woken by the
 * `webhooksChanged` signal, by the commit of new delivery rows (sink.ts) and
 * by a timer set for the next row that becomes due (at most `pollIntervalMs`
 * away), never by busy polling.
 *
 * Fairness: at most `concurrency` requests in flight overall and
 * `perWebhookConcurrency` per webhook, and the claim query takes a few rows of
 * every webhook, so a dead or slow endpoint holds its own slots only. Mail
 * delivery never waits on any of this: it only inserts rows.
 */
import os from 'node:os';
import crypto from 'node:crypto';
import type { AppDeps } from '../deps';
import type { Worker } from '../modules';
import { attemptDelivery, checkCaFile } from './attempt';
import { claim, dueCandidates, leaseOwners, nextDueAt, releaseLease, releaseLeasesOf } from './deliveries';
import { AttemptRecorder } from './recorder';
import { createWebhookMetrics, WebhookMetrics } from './metrics';
import { Job, loadJobs } from './jobs';
import { onDeliveriesCommitted } from './sink';
import { secretsKey, signingSecrets } from './store';

type DispatcherDeps = Pick<AppDeps, 'config' | 'db' | 'clock' | 'log' | 'metrics' | 'signals'>;

interface InFlight {
  webhookId: string;
  controller: AbortController;
  done: Promise<void>;
}

/** host/pid/nonce: a later start on this host can tell a dead owner's leases (see releaseDeadLeases). */
function newOwner(): string {
  return `${os.hostname()}/${process.pid}/${crypto.randomBytes(4).toString('hex')}`;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class WebhookDispatcher implements Worker {
  readonly name = 'webhooks';
  private readonly owner = newOwner();
  private readonly inFlight = new Map<string, InFlight>();
  private readonly perWebhook = new Map<string, number>();
  private readonly metrics: WebhookMetrics;
  private readonly leaseMs: number;
  private readonly recorder: AttemptRecorder;
  /** claims run one at a time, so the in-memory counts match what was claimed */
  private chain: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private running = false;
  /** set by stop(): no claims after it, even from runOnce */
  private stopped = false;
  private passQueued = false;

  constructor(private readonly deps: DispatcherDeps) {
    this.metrics = createWebhookMetrics(deps);
    this.recorder = new AttemptRecorder(deps.db);
    // Longer than the longest attempt (two lookups + the request), so a live attempt never loses its row.
    this.leaseMs = deps.config.webhooks.timeoutMs + 4 * deps.config.dns.timeoutMs + 30_000;
    checkCaFile(deps.config.webhooks.tlsCaFile); // a bad file stops the start, not every attempt
  }

  start(): void {
    this.running = true;
    const offSignal = this.deps.signals.on('webhooksChanged', () => this.wake());
    const offCommit = onDeliveriesCommitted(() => this.wake());
    this.unsubscribe = () => {
      offSignal();
      offCommit();
    };
    this.serialize(() => this.releaseDeadLeases());
    this.wake();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.stopped = true;
    this.unsubscribe?.();
    clearTimeout(this.timer);
    await this.chain; // a pass in progress launches nothing more
    // Aborted requests are not attempts: their leases are released and the next start sends them.
    for (const f of this.inFlight.values()) f.controller.abort();
    await Promise.allSettled([...this.inFlight.values()].map((f) => f.done));
  }

  /** Sends everything due now (retries that become due meanwhile are not due now) and waits for it. */
  async runOnce(): Promise<void> {
    for (;;) {
      const claimed = await this.serialize(() => this.fill());
      if (!claimed && !this.inFlight.size) return;
      await Promise.allSettled([...this.inFlight.values()].map((f) => f.done));
    }
  }

  /** Asks for a pass; wake-ups that arrive while one is queued share it (one claim commit for many rows). */
  private wake(): void {
    if (!this.running || this.passQueued) return;
    this.passQueued = true;
    void this.serialize(async () => {
      this.passQueued = false;
      await this.fill();
      // With every slot busy a finishing attempt wakes us; only a pass that left slots free needs the timer.
      if (this.inFlight.size < this.deps.config.webhooks.concurrency) await this.armTimer();
    }).catch((err: unknown) => this.deps.log.error({ err }, 'webhook dispatcher pass failed'));
  }

  private serialize<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.chain.then(fn, fn);
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** Claims as many due rows as there are free slots (one commit per round); returns how many it started. */
  private async fill(): Promise<number> {
    const { config, db, clock } = this.deps;
    const { concurrency, perWebhookConcurrency } = config.webhooks;
    let started = 0;
    for (;;) {
      const free = concurrency - this.inFlight.size;
      if (free <= 0 || this.stopped) return started;
      const now = clock.now();
      const full = [...this.perWebhook].filter(([, n]) => n >= perWebhookConcurrency).map(([id]) => id);
      const candidates = await dueCandidates(db, { now, perWebhook: perWebhookConcurrency, limit: free * 2, skipWebhooks: full });
      const picked = this.pick(candidates, free);
      const claimed = await claim(db, picked, this.owner, now, this.leaseMs);
      if (this.stopped) {
        for (const id of claimed) await releaseLease(db, id, this.owner);
        return started;
      }
      for (const job of await this.load(claimed)) this.launch(job);
      started += claimed.length;
      if (!claimed.length) return started;
    }
  }

  /** Candidates within the free slots and each webhook's remaining share, skipping rows already in flight. */
  private pick(candidates: Array<{ id: string; webhookId: string }>, free: number): string[] {
    const picked: string[] = [];
    const share = new Map(this.perWebhook);
    const cap = this.deps.config.webhooks.perWebhookConcurrency;
    for (const c of candidates) {
      if (picked.length >= free) break;
      if (this.inFlight.has(c.id) || (share.get(c.webhookId) ?? 0) >= cap) continue;
      share.set(c.webhookId, (share.get(c.webhookId) ?? 0) + 1);
      picked.push(c.id);
    }
    return picked;
  }

  /** Rows deleted since the claim (with their webhook) are simply gone; a paused webhook's rows go back. */
  private async load(ids: string[]): Promise<Job[]> {
    const { db, config } = this.deps;
    const jobs = await loadJobs(db, secretsKey(config.dataDir), ids);
    for (const job of jobs.filter((j) => !j.webhook.enabled)) await releaseLease(db, job.delivery.id, this.owner);
    return jobs.filter((j) => j.webhook.enabled);
  }

  private launch(job: Job): void {
    const { id, webhookId } = job.delivery;
    const controller = new AbortController();
    this.perWebhook.set(webhookId, (this.perWebhook.get(webhookId) ?? 0) + 1);
    const done = this.send(job, controller.signal)
      .catch((err: unknown) => this.deps.log.error({ err, deliveryId: id }, 'webhook attempt failed unexpectedly'))
      .finally(() => {
        this.inFlight.delete(id);
        const left = (this.perWebhook.get(webhookId) ?? 1) - 1;
        if (left > 0) this.perWebhook.set(webhookId, left);
        else this.perWebhook.delete(webhookId);
        this.wake();
      });
    this.inFlight.set(id, { webhookId, controller, done });
  }

  /** Attempt and record one claimed delivery. */
  private async send({ delivery, webhook, body }: Job, signal: AbortSignal): Promise<void> {
    const { config, db, clock, log } = this.deps;
    const attempt = delivery.attempts + 1;
    const startedAt = clock.now();
    const outcome = await attemptDelivery(config, {
      url: webhook.url, secrets: signingSecrets(webhook, startedAt), eventId: delivery.eventId, body, attempt, now: startedAt, signal,
    });
    if (outcome.aborted) return releaseLease(db, delivery.id, this.owner);
    const recorded = await this.recorder.record({
      delivery,
      owner: this.owner,
      attempt: {
        attemptedAt: startedAt, success: outcome.success, statusCode: outcome.statusCode,
        latencyMs: outcome.latencyMs, responseBody: outcome.responseBody, error: outcome.error,
      },
      finishedAt: clock.now(),
    });
    if (!recorded) return; // deleted with its webhook meanwhile
    this.metrics.observe(recorded.result, attempt, outcome.latencyMs);
    const fields = { deliveryId: delivery.id, webhookId: webhook.id, eventId: delivery.eventId, attempt, statusCode: outcome.statusCode, latencyMs: outcome.latencyMs };
    if (recorded.result === 'succeeded') log.info(fields, 'webhook delivered');
    else log.warn({ ...fields, error: outcome.error, result: recorded.result }, 'webhook attempt failed');
  }

  /** Sleep until the next row becomes claimable, but never longer than pollIntervalMs. */
  private async armTimer(): Promise<void> {
    if (!this.running) return;
    clearTimeout(this.timer);
    const { db, clock, config } = this.deps;
    const at = await nextDueAt(db);
    const poll = config.webhooks.pollIntervalMs;
    // Due but unclaimed: its webhook has used its share; a finishing attempt wakes us, the poll is a safety net.
    const delay = at === null || at <= clock.now() ? poll : Math.min(at - clock.now(), poll);
    this.timer = setTimeout(() => this.wake(), delay);
    this.timer.unref();
  }

  /**
   * Leases of a process that died (kill -9, power loss) would hold their rows
   * until they expire. At start, release those of owners on this host whose
   * process is gone, or whose pid is ours (we are a later start with that pid).
   */
  private async releaseDeadLeases(): Promise<void> {
    const host = os.hostname();
    const dead = (await leaseOwners(this.deps.db)).filter((owner) => {
      if (owner === this.owner) return false;
      const [h, pid] = owner.split('/');
      return h === host && (Number(pid) === process.pid || !processAlive(Number(pid)));
    });
    const released = await releaseLeasesOf(this.deps.db, dead);
    if (released) this.deps.log.info({ released }, 'released webhook deliveries held by a stopped process');
  }
}
