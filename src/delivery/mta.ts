/**
 * The MTA worker: claims due messages from the queue and runs each through the
 * pipeline, at most `delivery.concurrency` at a time. It sleeps until the
 * earliest next_attempt_at (a timer) or a `queueChanged` signal; it never
 * polls while idle. The hooks other modules plug in — tracking's
 * `prepareContent`, domains' `signingKeys`, pools' `pickSource` — are plain
 * functions set at wiring time (modules.ts).
 */
import type { AppDeps } from '../deps';
import type { Worker } from '../modules';
import { createClassifier } from './classify';
import { ownTransaction, type Transact } from './commit';
import { ContentPreparer, unchanged, type PrepareContent } from './content';
import { noSigningKeys, type SigningKeyLookup } from './dkim';
import { createDeliveryMetrics, type DeliveryMetrics } from './metrics';
import { createMxResolver } from './mx';
import { deliver, type PipelineDeps } from './pipeline';
import { claim, newLeaseOwner, nextWakeAt, queueDepth, releaseStaleLeases, stillOurs } from './queue';
import { recordOutcome, type Recorded } from './record';
import { createSandboxTransport } from './sandbox';
import { SmtpPool } from './smtp-pool';
import { createSourcePicker, type PickSource } from './source';
import { createSmtpTransport } from './transmit';
import type { Job, Outcome } from './types';
import { verpAddress } from './verp';

export interface DeliveryHooks {
  prepareContent: PrepareContent;
  signingKeys: SigningKeyLookup;
  pickSource: PickSource;
}

/** The longest a timer sleeps before looking again (also bounds a clock jump). */
const MAX_SLEEP_MS = 60 * 60_000;

export class Mta implements Worker {
  readonly name = 'delivery';
  readonly hooks: DeliveryHooks;
  readonly pool: SmtpPool;
  readonly metrics: DeliveryMetrics;
  private readonly owner = newLeaseOwner();
  private readonly pipeline: PipelineDeps;
  private readonly transact: Transact;
  private readonly inflight = new Set<Promise<void>>();
  private claims = 0;
  private running = false;
  private ready: Promise<void> = Promise.resolve();
  private pumping: Promise<void> | null = null;
  private again = false;
  private kickScheduled = false;
  private timer?: NodeJS.Timeout;
  private unsubscribe?: () => void;

  constructor(
    private readonly deps: AppDeps,
    hooks: Partial<DeliveryHooks> = {},
  ) {
    const { config, db, clock } = deps;
    this.transact = ownTransaction(db);
    this.hooks = {
      prepareContent: hooks.prepareContent ?? unchanged,
      signingKeys: hooks.signingKeys ?? noSigningKeys,
      pickSource: hooks.pickSource ?? createSourcePicker({ db, config, clock }),
    };
    this.metrics = createDeliveryMetrics(deps.metrics.registry, () => queueDepth(db));
    const d = config.delivery;
    this.pool = new SmtpPool(
      { maxPerHost: d.maxConnectionsPerDomain, maxPerSource: d.maxConnectionsPerIp, messagesPerConnection: d.messagesPerConnection, idleMs: d.idleConnectionMs },
      { opened: () => (this.metrics.connections.inc(), this.metrics.connectionsOpened.inc()), closed: () => this.metrics.connections.dec() },
    );
    const mx = createMxResolver(config, clock);
    const contents = new ContentPreparer({
      db,
      transact: this.transact,
      clock,
      log: deps.log,
      prepareContent: () => this.hooks.prepareContent,
      signingKeys: () => this.hooks.signingKeys,
    });
    this.pipeline = {
      db,
      clock,
      prepare: (job) => contents.prepare(job),
      pickSource: () => this.hooks.pickSource,
      mx,
      transmit: createSmtpTransport({ config, clock, pool: this.pool, mx, returnPath: (id) => verpAddress(config, id) }),
      sandbox: createSandboxTransport(clock),
      classify: createClassifier(d.bounceRulesFile),
      stillOurs: (job) => stillOurs(db, job),
    };
  }

  start(): void {
    this.running = true;
    this.unsubscribe = this.deps.signals.on('queueChanged', () => this.kick());
    this.ready = releaseStaleLeases(this.deps.db, this.deps.clock.now()).then(
      (n) => {
        if (n) this.deps.log.info({ messages: n }, 'returned messages left in flight by the previous run to the queue');
        this.kick();
      },
      (err) => this.deps.log.error({ err }, 'could not release stale queue leases'),
    );
  }

  async stop(): Promise<void> {
    this.running = false;
    this.unsubscribe?.();
    clearTimeout(this.timer);
    await this.ready;
    await this.pumping;
    await Promise.allSettled([...this.inflight]);
    this.pool.close();
  }

  /** Processes everything due now, waits for it, and returns (tests with a fake clock). */
  async runOnce(): Promise<void> {
    await this.ready;
    for (;;) {
      if (this.pumping) await this.pumping;
      if (this.inflight.size) {
        await Promise.allSettled([...this.inflight]);
        continue;
      }
      const claimed = await this.claimAndLaunch();
      if (claimed === 0 && !this.pumping && this.inflight.size === 0) return;
    }
  }

  /** Look at the queue now (coalesced: one pump at a time, re-run if kicked meanwhile). */
  private kick(): void {
    if (!this.running) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = this.pump()
      .catch((err) => this.deps.log.error({ err }, 'delivery queue scan failed'))
      .finally(() => {
        this.pumping = null;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Several jobs finishing in one turn of the event loop cause one claim, not several. */
  private scheduleKick(): void {
    if (this.kickScheduled || !this.running) return;
    this.kickScheduled = true;
    setImmediate(() => {
      this.kickScheduled = false;
      this.kick();
    });
  }

  private async pump(): Promise<void> {
    while (this.running && this.freeSlots() > 0) {
      const asked = this.freeSlots();
      if ((await this.claimAndLaunch()) < asked) break;
    }
    if (this.running && this.freeSlots() > 0) await this.sleepUntilDue();
  }

  private freeSlots(): number {
    return this.deps.config.delivery.concurrency - this.inflight.size;
  }

  private async claimAndLaunch(): Promise<number> {
    const limit = this.freeSlots();
    if (limit <= 0) return 0;
    const request = {
      owner: `${this.owner}.${++this.claims}`,
      now: this.deps.clock.now(),
      leaseMs: this.deps.config.delivery.leaseSeconds * 1000,
      limit,
    };
    const jobs = await this.transact((trx) => claim(trx, request));
    for (const job of jobs) this.launch(job);
    return jobs.length;
  }

  private async sleepUntilDue(): Promise<void> {
    const at = await nextWakeAt(this.deps.db);
    clearTimeout(this.timer);
    if (at === null || !this.running) return;
    const delay = Math.min(Math.max(0, at - this.deps.clock.now()), MAX_SLEEP_MS);
    this.timer = setTimeout(() => this.kick(), delay);
    this.timer.unref();
  }

  private launch(job: Job): void {
    const task: Promise<void> = this.process(job)
      .catch((err) => this.deps.log.error({ err, messageId: job.id }, 'recording a delivery outcome failed; the lease will return it to the queue'))
      .finally(() => {
        this.inflight.delete(task);
        this.scheduleKick();
      });
    this.inflight.add(task);
  }

  private async process(job: Job): Promise<void> {
    let outcome: Outcome;
    try {
      outcome = await deliver(job, this.pipeline);
    } catch (err) {
      this.deps.log.error({ err, messageId: job.id }, 'delivery failed unexpectedly; deferring');
      outcome = { kind: 'deferred', attempt: null, diagnostic: `internal error: ${(err as Error).message}` };
    }
    const recorded = await recordOutcome({ transact: this.transact, clock: this.deps.clock, config: this.deps.config }, job, outcome);
    this.observe(job, outcome, recorded);
  }

  private observe(job: Job, outcome: Outcome, recorded: Recorded | null): void {
    if (!recorded) {
      this.deps.log.info({ messageId: job.id, reason: outcome.kind === 'dropped' ? outcome.reason : 'lease lost' }, 'message no longer ours; nothing recorded');
      return;
    }
    this.metrics.deliveries.inc({ result: recorded.result });
    if (recorded.result === 'delivered') this.metrics.latency.observe((this.deps.clock.now() - (job.sendAt ?? job.createdAt)) / 1000);
    if (recorded.events) this.deps.signals.emit('webhooksChanged');
    const attempt = 'attempt' in outcome ? outcome.attempt : null;
    this.deps.log.info(
      { messageId: job.id, result: recorded.result, mx: attempt?.mx, sourceIp: attempt?.sourceIp, tls: attempt?.tls, reply: attempt?.response },
      'delivery attempt recorded',
    );
  }
}
