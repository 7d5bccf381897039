/**
 * The MTA worker: claims due messages from the queue and runs each through the
 * pipeline, at most `delivery.concurrency` at a time. It sleeps until the
 * earliest next_attempt_at (a timer) or a `queueChanged` signal; it never
 * polls while idle. The hooks other modules plug in — tracking's
 * `prepareContent`, domains' `signingKeys`, pools' `pickSource` and `sourceSettled` — are plain
 * functions set at wiring time (modules.ts).
 */
import type { AppDeps } from '../deps';
import type { Db } from '../db';
import { isPostgres } from '../db';
import type { Worker } from '../modules';
import { assemble, type DeliveryHooks } from './assemble';
import type { Submit, Transact } from './commit';
import { PreloadBatcher } from './preload';
import { unchanged } from './content';
import { noSigningKeys } from './dkim';
import type { DeliveryMetrics } from './metrics';
import { deliver, type PipelineDeps } from './pipeline';
import { claim, newLeaseOwner, nextWakeAt, nodeId, pausedDestinations, releaseStaleLeases, toJob, type MessageRow } from './queue';
import type { Grant, HandoffTaker } from './handoff';
import { recordOutcome, type Recorded } from './record';
import type { Signer } from './signer';
import type { SmtpPool } from './smtp-pool';
import { createSourcePicker, nothingToSettle } from './source';
import { sendableHere, sendsHere, type SendableScope, type SendFacts } from '../pools/node-scope';
import type { Job, Outcome } from './types';

export type { DeliveryHooks };

/** The longest a timer sleeps before looking again (also bounds a clock jump). */
const MAX_SLEEP_MS = 60 * 60_000;
/**
 * On PostgreSQL other nodes accept sends this node may have to make (its pools) and no signal of theirs
 * reaches it: an idle node looks at the queue at least this often (one indexed read).
 */
const SHARED_QUEUE_LOOK_MS = 5_000;
/** While messages are in flight, how often the queue is looked at for retries falling due. */
const BUSY_CHECK_MS = 1000;

export class Mta implements Worker, HandoffTaker {
  readonly name = 'delivery';
  readonly hooks: DeliveryHooks;
  readonly pool: SmtpPool;
  readonly metrics: DeliveryMetrics;
  private readonly owner: string;
  /**
   * PostgreSQL: the queued rows this node can send (sandbox, and pools with an address in this node's ips).
   * SQLite, one node per file: none (every row), so it sends and overflows exactly as a single node always did.
   */
  private readonly sendable: SendableScope | undefined;
  private readonly pipeline: PipelineDeps;
  private readonly transact: Transact;
  private readonly submit: Submit;
  /** The app's read-only connections (deps.reader): in WAL mode reads need not queue behind the writer. */
  private readonly reader: Db;
  private readonly signer: Signer;
  /** the batch reads (suppressions, contents) of handed-over and claimed jobs, several hand-overs to a query */
  private readonly preloads: PreloadBatcher;
  private readonly inflight = new Set<Promise<void>>();
  /** handed-over copies being launched (runOnce and shutdown wait for them too) */
  private readonly handing = new Set<Promise<void>>();
  private claims = 0;
  /** slots promised to accepted batches whose copies are not launched yet (handoff.ts) */
  private reserved = 0;
  /** recipient domains an operator paused: the claim skips them in SQL, the hand-off here */
  private pausedDestinations = new Set<string>();
  /** slots asked for by a claim still waiting for its transaction */
  private claiming = 0;
  /** wake-ups so far: runOnce claims again after a full look only when one came (the queue changed) */
  private kicks = 0;
  private running = false;
  private stopped: Promise<void> | undefined;
  private ready: Promise<void> = Promise.resolve();
  private pumping: Promise<void> | null = null;
  private again = false;
  private pumpScheduled = false;
  /** the last claim found fewer due rows than it asked for and nothing woke us since; only a kick looks again */
  private drained = false;
  private timer?: NodeJS.Timeout;
  private unsubscribe: Array<() => void> = [];

  constructor(
    private readonly deps: AppDeps,
    hooks: Partial<DeliveryHooks> = {},
  ) {
    this.owner = newLeaseOwner(nodeId(deps.config));
    this.sendable = isPostgres(deps.db) ? sendableHere(deps.config) : undefined;
    this.transact = (work) => deps.writer.run(work);
    this.submit = (kind, item) => deps.writer.batch(kind, item);
    this.reader = deps.reader; // the app's read-only connections: WAL reads never queue behind the writer
    this.preloads = new PreloadBatcher(this.reader);
    this.hooks = {
      prepareContent: hooks.prepareContent ?? unchanged,
      signingKeys: hooks.signingKeys ?? noSigningKeys,
      pickSource: hooks.pickSource ?? createSourcePicker({ db: this.reader, config: deps.config, clock: deps.clock }),
      sourceSettled: hooks.sourceSettled ?? nothingToSettle,
    };
    ({ pipeline: this.pipeline, pool: this.pool, signer: this.signer, metrics: this.metrics } = assemble(deps, this.reader, this.hooks));
  }

  start(): void {
    this.running = true;
    this.unsubscribe = [
      this.deps.signals.on('queueChanged', () => this.kick()),
      this.deps.signals.on('destinationsChanged', () => void this.loadPausedDestinations().then(() => this.kick())),
    ];
    this.ready = releaseStaleLeases(this.deps.db, this.deps.clock.now(), nodeId(this.deps.config)).then(
      (n) => {
        if (n) this.deps.log.info({ messages: n }, 'returned messages left in flight by the previous run to the queue');
        // Only now: the release above would otherwise hand rows leased to us back to the queue.
        if (this.running) this.deps.handoff.attach(this);
        void this.loadPausedDestinations();
        this.kick();
      },
      (err) => this.deps.log.error({ err }, 'could not release stale queue leases'),
    );
  }

  /** Idempotent: a second call waits for the first. */
  stop(): Promise<void> {
    return (this.stopped ??= this.shutdown());
  }

  private async shutdown(): Promise<void> {
    this.running = false;
    this.deps.handoff.detach(this);
    for (const off of this.unsubscribe) off();
    clearTimeout(this.timer);
    await this.ready;
    await this.pumping;
    await Promise.allSettled([...this.handing]);
    await Promise.allSettled([...this.inflight]);
    this.pool.close();
    await this.signer.close();
  }

  /** Processes everything due now, waits for it, and returns (tests with a fake clock). */
  async runOnce(): Promise<void> {
    await this.ready;
    for (;;) {
      if (this.pumpScheduled) {
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      if (this.pumping) {
        await this.pumping; // a pump's claim may hold rows it has not launched yet
        continue;
      }
      if (this.inflight.size || this.handing.size) {
        await Promise.allSettled([...this.inflight, ...this.handing]);
        continue;
      }
      // A look on the reader first: the claim, a write, only when something is due (a test's clock moves
      // without our timers, so the drained flag cannot tell).
      const at = await nextWakeAt(this.reader, this.sendable);
      if (at === null || at > this.deps.clock.now()) {
        if (!this.pumpScheduled && !this.pumping && !this.inflight.size && !this.handing.size) return;
        continue;
      }
      const claimed = await this.claimAndLaunch();
      if (claimed === 0 && !this.pumpScheduled && !this.pumping && !this.inflight.size && !this.handing.size) return;
    }
  }

  /** New work may be due (a signal, the timer, start): look at the queue now. */
  private kick(): void {
    this.kicks++;
    this.drained = false;
    this.schedulePump();
  }

  /**
   * One pump at a time; a request while one runs makes it run again. Several
   * jobs finishing in one turn of the event loop cause one pump, not several.
   */
  private schedulePump(): void {
    if (!this.running) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
      this.pumping = this.pump()
        .catch((err) => this.deps.log.error({ err }, 'delivery queue scan failed'))
        .finally(() => {
          this.pumping = null;
          if (this.again) {
            this.again = false;
            this.schedulePump();
          }
        });
    });
  }

  /** Fills free slots until the queue has nothing due (drained), then arranges the next look. */
  private async pump(): Promise<void> {
    await this.ready; // a wake-up before start-up released stale leases must not claim rows it then returns
    while (this.running && !this.drained && this.freeSlots() > 0) await this.claimAndLaunch();
    if (this.running && this.drained) await this.armTimer();
  }

  private freeSlots(): number {
    return this.deps.config.delivery.concurrency - this.inflight.size - this.reserved - this.claiming;
  }

  /**
   * The accept path offers copies due now: take what free slots allow, leased to us in its transaction; none
   * of a pool this node has no address of (another node's claim takes them).
   */
  async reserve(wanted: number, now: number, batch: SendFacts): Promise<Grant | null> {
    if (this.sendable && !(await this.sendsHere(batch))) return null;
    const count = Math.min(wanted, this.freeSlots());
    if (!this.running || count <= 0) return null;
    this.reserved += count;
    let open = true;
    const release = (): void => {
      if (!open) return;
      open = false;
      this.reserved -= count;
    };
    return {
      owner: `${this.owner}.${++this.claims}`,
      expiresAt: now + this.deps.config.delivery.leaseSeconds * 1000,
      count,
      takes: (domain) => !this.pausedDestinations.has(domain),
      hand: (rows, contents) => {
        if (!open) return;
        const handing = this.takeHanded(rows as unknown as MessageRow[], contents).finally(() => {
          release();
          this.handing.delete(handing);
        });
        this.handing.add(handing);
      },
      cancel: () => {
        release();
        this.schedulePump(); // the slots this grant held may be wanted by rows waiting in the queue
      },
    };
  }

  private async sendsHere(batch: SendFacts): Promise<boolean> {
    try {
      return await sendsHere(this.deps.db, this.deps.config, batch);
    } catch (err) {
      this.deps.log.warn({ err }, 'could not tell whether this node sends an accepted batch; leaving it to the claim');
      return false;
    }
  }

  private async loadPausedDestinations(): Promise<void> {
    try {
      this.pausedDestinations = await pausedDestinations(this.reader);
    } catch (err) {
      this.deps.log.error({ err }, 'reading paused destinations failed; fresh sends to them may go out');
    }
  }

  /** Launches handed-over copies (their slots stay reserved until they are in flight). */
  private async takeHanded(rows: MessageRow[], contents: ReadonlyMap<string, Buffer>): Promise<void> {
    if (!this.running) return; // stopping: the leases lapse and a later claim (or the next start) takes them
    const jobs = rows.map(toJob);
    await this.preloads.preload(jobs, contents).catch((err) => this.deps.log.warn({ err }, 'preloading handed-over messages failed; each reads its own'));
    for (const job of jobs) this.launch(job);
  }

  private async claimAndLaunch(): Promise<number> {
    const limit = this.freeSlots();
    if (limit <= 0) return 0;
    const request = {
      owner: `${this.owner}.${++this.claims}`,
      now: this.deps.clock.now(),
      leaseMs: this.deps.config.delivery.leaseSeconds * 1000,
      limit,
      sendable: this.sendable,
    };
    const kicksBefore = this.kicks;
    this.claiming += limit; // these slots are spoken for until the claimed jobs are in flight (reserve() sees it)
    try {
      const jobs = await this.transact((trx) => claim(trx, request));
      // Fewer rows than asked: the claim saw every due row, unless a wake-up came meanwhile (a send committed
      // with the claim or after it), which must not be lost.
      if (jobs.length < limit && this.kicks === kicksBefore) this.drained = true;
      await this.preloads.preload(jobs);
      for (const job of jobs) this.launch(job);
      return jobs.length;
    } finally {
      this.claiming -= limit;
    }
  }

  /**
   * Idle: sleep until the earliest next_attempt_at or lease expiry (no polling).
   * Busy: finishing jobs look at the queue anyway; one light look per second
   * covers retries that fall due meanwhile.
   */
  private async armTimer(): Promise<void> {
    if (this.inflight.size > 0) {
      if (!this.timer) this.setTimer(BUSY_CHECK_MS);
      return;
    }
    const at = await nextWakeAt(this.reader, this.sendable);
    if (!this.running || this.inflight.size > 0) return;
    const longest = isPostgres(this.deps.db) ? SHARED_QUEUE_LOOK_MS : MAX_SLEEP_MS;
    if (at === null) return this.setTimer(isPostgres(this.deps.db) ? longest : null);
    this.setTimer(Math.min(Math.max(0, at - this.deps.clock.now()), longest));
  }

  private setTimer(delayMs: number | null): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (delayMs === null) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.kick();
    }, delayMs);
    this.timer.unref();
  }

  private launch(job: Job): void {
    const task: Promise<void> = this.process(job)
      .catch((err) => this.deps.log.error({ err, messageId: job.id }, 'recording a delivery outcome failed; the lease will return it to the queue'))
      .finally(() => {
        this.inflight.delete(task);
        this.schedulePump();
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
    try {
      const recorded = await recordOutcome({ submit: this.submit, clock: this.deps.clock, config: this.deps.config }, job, outcome);
      this.observe(job, outcome, recorded);
    } finally {
      job.pendingContent?.settled?.();
    }
  }

  private observe(job: Job, outcome: Outcome, recorded: Recorded | null): void {
    if (!recorded) {
      this.deps.log.info({ messageId: job.id, reason: outcome.kind === 'dropped' ? outcome.reason : 'lease lost' }, 'message no longer ours; nothing recorded');
      return;
    }
    this.metrics.deliveries.inc({ result: recorded.result });
    if (recorded.result === 'delivered') this.metrics.latency.observe((this.deps.clock.now() - (job.sendAt ?? job.createdAt)) / 1000);
    // New webhook rows wake the dispatcher from their own commit (webhooks/sink.ts): events with no webhook
    // subscribed cost no look at the webhook queue.
    const attempt = 'attempt' in outcome ? outcome.attempt : null;
    this.deps.log.info(
      { messageId: job.id, result: recorded.result, mx: attempt?.mx, sourceIp: attempt?.sourceIp, tls: attempt?.tls, reply: attempt?.response },
      'delivery attempt recorded',
    );
  }
}
