/**
 * The webhook dispatcher: the last stage of the event fan-out. New delivery
 * rows of this process are handed to it in memory as far as it has room
 * (handoff.ts); it claims the other due rows a batch at a time (claims.ts).
 * Both are held in memory and sent as slots free up (launcher.ts), on the
 * sender thread (send-thread.ts), each result written in the next batch
 * (recorder.ts, results.ts), which also schedules the retries.
 *
 * It asks the database only when something can be due: after a signal (the
 * commit of new delivery rows, `webhooksChanged`), when the earliest retry it
 * knows of comes due, when a webhook whose share of the last claim was full,
 * or which has new rows, is down to REFILL_ROUNDS rounds held, and at the poll
 * interval (rows written by another process). Otherwise a pass costs no
 * statement at all.
 *
 * Fairness: at most `concurrency` requests in flight overall and
 * `perWebhookConcurrency` per webhook; a claim takes a bounded share of every
 * webhook, so a dead or slow endpoint holds its own slots only. Mail delivery
 * never waits on any of this: it only inserts rows.
 */
import type { AppDeps } from '../deps';
import type { Worker } from '../modules';
import { checkCaFile } from './attempt';
import { claimDue, nextDueAfter } from './claims';
import { toDelivery } from './deliveries';
import { attachDeliveryTaker, detachDeliveryTaker, type DeliveryTaker, type HandedDelivery } from './handoff';
import { Launcher } from './launcher';
import { newOwner, releaseDeadLeases } from './owners';
import { onDeliveriesCommitted } from './sink';

type DispatcherDeps = Pick<AppDeps, 'config' | 'db' | 'reader' | 'clock' | 'log' | 'metrics' | 'signals' | 'writer'>;

/**
 * A claim takes up to this many rounds of perWebhookConcurrency per webhook: fewer claims, longer leases. While
 * mail flows at full speed, a claim takes ~15 ms to come back (its turn at the writer's connection), and a fast
 * receiver answers a round in ~1-2 ms: with 8 rounds, one webhook on every event kept pace with 40 % of the
 * events at most; with 16, 60 % (compare --only=webhook; docs/benchmarks.md).
 */
export const CLAIM_ROUNDS = 16;
/** Time beyond the attempts a lease allows for, once per claim: writing results, a busy event loop. */
const LEASE_SLACK_MS = 60_000;
/**
 * A webhook's next claim is made once it holds this many rounds or fewer (queued and in flight). A claim waits
 * its turn at the database's writer connection, ~15 ms while mail flows at full speed: made when only the last
 * round was left, it ran after the queue had emptied, and deliveries kept up with a third of the events.
 */
const REFILL_ROUNDS = CLAIM_ROUNDS / 2;

export class WebhookDispatcher implements Worker, DeliveryTaker {
  readonly name = 'webhooks';
  private readonly owner: string;
  private readonly launcher: Launcher;
  private readonly leaseMs: number;
  /** new rows written leased to us whose transaction has not settled yet, per webhook (handoff.ts) */
  private readonly reserved = new Map<string, number>();
  private reservedTotal = 0;
  /** stop() waits for the last reservation to settle */
  private reservationsSettled: (() => void) | undefined;
  /** while a claim's query runs: the room it may take, and the webhooks it skips (the others it may fill) */
  private claiming: { room: number; skips: ReadonlySet<string> } | undefined;
  /** new rows may be due now (a signal, the poll, the start) */
  private mayBeDue = true;
  /** webhooks that may have more due rows: their share of the last claim was full, or this process committed new ones */
  private readonly moreDue = new Map<string, number>();
  /** counts additions to moreDue: a claim forgets only the entries made before its query */
  private moreDueSeq = 0;
  /** the earliest future due time known; valid while nextDueKnown */
  private nextDue: number | null = null;
  private nextDueKnown = false;
  private chain: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private running = false;
  private stopped = false;
  private passQueued = false;

  constructor(private readonly deps: DispatcherDeps) {
    const { timeoutMs, tlsCaFile } = deps.config.webhooks;
    this.owner = newOwner(deps.config.node.id);
    this.launcher = new Launcher(deps, this.owner, {
      slotFreed: () => this.wake(),
      retryAt: (at) => {
        if (this.nextDueKnown) this.nextDue = Math.min(this.nextDue ?? Infinity, at);
      },
    });
    // The longest attempt (the guard's lookups + the request) for every round the row may wait in the queue:
    // behind at most REFILL_ROUNDS rounds held when it was claimed, and the rounds of its own claim; plus slack.
    // (With the defaults 24 × 22 s + 60 s, 9.8 min; it was 12 × 52 s, 10.4 min, when the slack counted per round
    // and claims took 8 rounds.) That assumes the webhook gets its full share each round: with more busy webhooks
    // than `concurrency` has slots for, a row can outwait its lease, and another node may then send it too (at
    // least once, as every delivery is).
    this.leaseMs = (timeoutMs + 4 * deps.config.dns.timeoutMs) * (CLAIM_ROUNDS + REFILL_ROUNDS) + LEASE_SLACK_MS;
    checkCaFile(tlsCaFile); // a bad file stops the start, not every attempt
  }

  start(): void {
    this.running = true;
    const offSignal = this.deps.signals.on('webhooksChanged', () => this.wake(true));
    // Rows committed without a signal (accepted mail, the MTA's outcomes): this dispatcher looks (rowsCommitted),
    // and the bus tells the other nodes (db/notify.ts), which claim with SKIP LOCKED what this one has no slot for.
    const offCommit = onDeliveriesCommitted((webhookIds) => {
      this.rowsCommitted(webhookIds);
      this.deps.signals.publish('webhooksChanged');
    });
    attachDeliveryTaker(this.deps.db, this);
    this.unsubscribe = () => {
      detachDeliveryTaker(this.deps.db, this);
      offSignal();
      offCommit();
    };
    void this.serialize(async () => {
      const released = await releaseDeadLeases(this.deps.db, this.owner, this.deps.config.node.id);
      if (released) this.deps.log.info({ released }, 'released webhook deliveries held by a stopped process');
    }).catch((err: unknown) => this.deps.log.error({ err }, 'releasing dead webhook leases failed'));
    this.wake(true);
  }

  async stop(): Promise<void> {
    this.running = false;
    this.stopped = true;
    this.unsubscribe?.();
    clearTimeout(this.timer);
    this.launcher.halt(); // neither a freed slot nor the pass in progress launches anything more
    await this.chain;
    // Rows reserved for hand-over whose transactions the writer (still running) has yet to settle: once durable
    // they join the released ones, so a clean stop leaves nothing leased to us.
    await this.launcher.stop(async () => {
      if (this.reservedTotal > 0) await new Promise<void>((resolve) => (this.reservationsSettled = resolve));
    });
  }

  /** Sends everything due now (retries that become due meanwhile are not due now) and waits for it. */
  async runOnce(): Promise<void> {
    this.mayBeDue = true; // a test's clock moves without our timers
    while (!this.stopped) {
      const claimed = await this.serialize(() => this.fill());
      if (!claimed && !this.launcher.busy) return;
      await this.launcher.settled();
    }
  }

  /**
   * New rows of these webhooks are committed. Those of a webhook this dispatcher already holds a batch of are
   * left to the claim made when that batch runs low (moreDue): claiming at every commit while mail flows made
   * most claims come back empty, each a write waiting its turn at the writer's connection.
   */
  private rowsCommitted(webhookIds: ReadonlySet<string>): void {
    for (const id of webhookIds) this.markMoreDue(id);
    this.wake();
  }

  private markMoreDue(webhookId: string): void {
    this.moreDue.set(webhookId, ++this.moreDueSeq);
  }

  /** Asks for a pass; wake-ups that arrive while one is queued share it. */
  private wake(newRows = false): void {
    if (newRows) this.mayBeDue = true;
    if (!this.running || this.passQueued) return;
    this.passQueued = true;
    void this.serialize(async () => {
      this.passQueued = false;
      await this.fill();
      await this.learnNextDue();
      this.armTimer();
    }).catch((err: unknown) => this.deps.log.error({ err }, 'webhook dispatcher pass failed'));
  }

  private serialize<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.chain.then(fn, fn);
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** Starts queued work in the free slots and claims more while something can be due; returns how many it claimed. */
  private async fill(): Promise<number> {
    let claimed = 0;
    for (;;) {
      await this.launcher.startReady();
      const n = await this.claim();
      if (!n) return claimed;
      claimed += n;
    }
  }

  /** A webhook's rows held: queued, in flight, and reserved for hand-over. */
  private held(webhookId: string): number {
    return this.launcher.held(webhookId) + (this.reserved.get(webhookId) ?? 0);
  }

  /** Room for rows in all: a claim's batch, or new rows handed over; a claim under way has spoken for its own. */
  private room(): number {
    const { concurrency } = this.deps.config.webhooks;
    return concurrency * CLAIM_ROUNDS - this.launcher.size - this.reservedTotal - (this.claiming?.room ?? 0);
  }

  /**
   * A new row of this webhook is about to be written (handoff.ts): taken, leased to us, while the room and the
   * webhook's share of a claim allow, unless the table may hold older due rows of it (moreDue: those go first,
   * by a claim), and unless a claim under way may fill its share (the share would then hold twice as much).
   */
  reserve(webhookId: string): { owner: string; expiresAt: number } | null {
    if (!this.running || this.moreDue.has(webhookId) || this.room() <= 0) return null;
    if (this.claiming && !this.claiming.skips.has(webhookId)) return null;
    if (this.held(webhookId) >= this.deps.config.webhooks.perWebhookConcurrency * CLAIM_ROUNDS) return null;
    this.reserved.set(webhookId, (this.reserved.get(webhookId) ?? 0) + 1);
    this.reservedTotal++;
    return { owner: this.owner, expiresAt: this.deps.clock.now() + this.leaseMs };
  }

  /** The rows reserved are durable (queued now, sent as slots allow) or rolled back (forgotten). */
  settle(handed: HandedDelivery[], durable: boolean): void {
    try {
      for (const { row } of handed) this.unreserve(row.webhook_id);
      if (!durable) return;
      if (this.stopped) return this.launcher.giveBack(handed.map(({ row }) => row.id));
      const unread = this.launcher.addHanded(handed.map(({ row, body }) => ({ delivery: toDelivery(row), body })));
      if (unread) this.wake(); // its pass reads the webhook (startReady), then launches
    } catch (err) {
      // Not expected; the rows stay leased to us until the next start here releases them, or the lease lapses.
      this.deps.log.error({ err, deliveries: handed.length }, 'taking over new webhook deliveries failed');
    }
  }

  private unreserve(webhookId: string): void {
    const left = (this.reserved.get(webhookId) ?? 0) - 1;
    if (left > 0) this.reserved.set(webhookId, left);
    else this.reserved.delete(webhookId);
    if (--this.reservedTotal === 0) this.reservationsSettled?.();
  }

  /** Whether a webhook holds few enough rows for a claim of more (see REFILL_ROUNDS). */
  private wantsMore(webhookId: string): boolean {
    return this.held(webhookId) <= this.deps.config.webhooks.perWebhookConcurrency * REFILL_ROUNDS;
  }

  /** One batch claim, when something can be due and the queue has room; returns how many rows it took. */
  private async claim(): Promise<number> {
    const { config, db, clock } = this.deps;
    const { perWebhookConcurrency: share } = config.webhooks;
    const now = clock.now();
    const room = this.room();
    const retryDue = this.nextDue !== null && this.nextDue <= now;
    const wanted = this.mayBeDue || retryDue || [...this.moreDue.keys()].some((id) => this.wantsMore(id));
    if (this.stopped || room <= 0 || !wanted) return 0;
    // Taken now, not after the query: a wake-up (new rows, runOnce) while it runs must ask for another claim.
    const asked = this.mayBeDue;
    this.mayBeDue = false;
    const seenSeq = this.moreDueSeq; // rows committed while the query runs are not in what it saw
    const skip = [...new Set([...this.launcher.webhookIds(), ...this.reserved.keys()])].filter((id) => !this.wantsMore(id));
    const depth = share * CLAIM_ROUNDS;
    this.claiming = { room, skips: new Set(skip) }; // until the rows are queued: reserve() must not take the same room
    try {
      const rows = await claimDue(db, { now, perWebhook: depth, limit: room, skipWebhooks: skip }, this.owner, now + this.leaseMs)
        .catch((err: unknown) => {
          this.mayBeDue ||= asked; // not claimed: still asked for
          throw err;
        });
      this.noteClaimed(rows, { skip, seenSeq, depth, room, asked, retryDue });
      await this.launcher.addClaimed(rows.map((r) => r.id));
      return rows.length;
    } finally {
      this.claiming = undefined;
    }
  }

  /** What the claim saw: skipped webhooks may have new rows, a full share may hide more, the rest is drained. */
  private noteClaimed(rows: Array<{ webhookId: string }>, q: { skip: string[]; seenSeq: number; depth: number; room: number; asked: boolean; retryDue: boolean }): void {
    const perHook = new Map<string, number>();
    for (const r of rows) perHook.set(r.webhookId, (perHook.get(r.webhookId) ?? 0) + 1);
    for (const [id, seq] of [...this.moreDue]) if (seq <= q.seenSeq && !q.skip.includes(id)) this.moreDue.delete(id);
    if (q.asked || q.retryDue) q.skip.forEach((id) => this.markMoreDue(id)); // a skipped webhook's due rows wait for room
    for (const [id, n] of perHook) if (n >= q.depth) this.markMoreDue(id);
    if (rows.length >= q.room) this.mayBeDue = true;
    if (q.retryDue) {
      this.nextDue = null; // passed: learn the next one anew
      this.nextDueKnown = false;
    }
  }

  /** After a start or a poll, or once the known next due time passed: one query for the earliest future one. */
  private async learnNextDue(): Promise<void> {
    if (this.nextDueKnown || this.stopped) return;
    // Known before the query: retries scheduled while it runs are then folded in (retryAt).
    this.nextDueKnown = true;
    const now = this.deps.clock.now();
    const found = await nextDueAfter(this.deps.db, now);
    if (found !== null) this.nextDue = Math.min(this.nextDue ?? Infinity, found);
  }

  /** Sleeps until the next known due time, but never longer than pollIntervalMs. */
  private armTimer(): void {
    if (!this.running) return;
    clearTimeout(this.timer);
    const { clock, config } = this.deps;
    const poll = config.webhooks.pollIntervalMs;
    const now = clock.now();
    // Due but not claimable now (the queue is full): a finishing attempt wakes us, the poll is a safety net.
    const untilDue = this.nextDue === null || this.nextDue <= now ? Infinity : this.nextDue - now;
    const byPoll = untilDue >= poll;
    this.timer = setTimeout(() => {
      if (byPoll) this.nextDueKnown = false; // rows of other processes, leases that lapsed
      this.wake(byPoll);
    }, Math.min(untilDue, poll));
    this.timer.unref();
  }
}
