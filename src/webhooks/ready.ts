/**
 * The dispatcher's memory of claimed work: deliveries it holds the lease on
 * and has not started yet, one lane per webhook, with the webhook (url and
 * opened secrets) as read at claim time. Lanes are served in turn so one
 * webhook's batch cannot keep the global slots from the others. A lane's
 * webhook is re-read when it is older than a second (see the dispatcher), so
 * a changed url, a rotated secret or a pause reaches queued deliveries too.
 *
 * Deliveries handed over in memory (handoff.ts) come without their webhook:
 * they join its lane, or take the webhook as last read here (a bounded
 * memory); a lane with none is stale until the dispatcher reads it.
 */
import type { Delivery } from './deliveries';
import type { Job } from './jobs';
import type { SigningWebhook } from './store';

interface Lane {
  /** null: handed-over deliveries of a webhook not read yet (stale) */
  webhook: SigningWebhook | null;
  /** performance.now() when the webhook was read */
  readAt: number;
  deliveries: Array<{ delivery: Delivery; body: string }>;
}

/** Webhooks remembered as last read, for hand-overs to lanes that emptied: beyond this, the oldest go. */
const LAST_READ_MAX = 1_024;

export class ReadyQueue {
  private readonly lanes = new Map<string, Lane>();
  /** the webhooks as last read (claim, re-read), by id, oldest first */
  private readonly lastRead = new Map<string, { webhook: SigningWebhook; readAt: number }>();
  /** ids of every queued delivery */
  private readonly ids = new Set<string>();
  private count = 0;

  get size(): number {
    return this.count;
  }

  /**
   * Queues claimed jobs. A delivery already queued here, or in flight (`inFlight`), is not queued again: a lease
   * that lapsed while its row waited here is claimed again by this same dispatcher, and must not be sent twice.
   */
  add(jobs: Job[], readAt: number, inFlight: (deliveryId: string) => boolean = () => false): void {
    for (const { delivery, webhook, body } of jobs) {
      const lane = this.queue(webhook.id, delivery, body, inFlight);
      if (lane) this.setRead(lane, webhook, readAt);
    }
  }

  /**
   * Queues deliveries handed over in memory. They join their webhook's lane as it stands; a new lane takes the
   * webhook as last read, or none: then it is stale until setWebhook. Returns whether any lane is stale now.
   */
  addHanded(items: Array<{ delivery: Delivery; body: string }>, inFlight: (deliveryId: string) => boolean): boolean {
    let stale = false;
    for (const { delivery, body } of items) {
      const known = this.lanes.has(delivery.webhookId);
      const lane = this.queue(delivery.webhookId, delivery, body, inFlight);
      if (!lane || known) continue;
      const last = this.lastRead.get(delivery.webhookId);
      if (last) Object.assign(lane, last);
      stale ||= !last;
    }
    return stale;
  }

  private queue(webhookId: string, delivery: Delivery, body: string, inFlight: (deliveryId: string) => boolean): Lane | undefined {
    if (this.ids.has(delivery.id) || inFlight(delivery.id)) return undefined;
    this.ids.add(delivery.id);
    let lane = this.lanes.get(webhookId);
    if (!lane) this.lanes.set(webhookId, (lane = { webhook: null, readAt: -Infinity, deliveries: [] }));
    lane.deliveries.push({ delivery, body });
    this.count++;
    return lane;
  }

  private setRead(lane: Lane, webhook: SigningWebhook, readAt: number): void {
    Object.assign(lane, { webhook, readAt });
    this.lastRead.delete(webhook.id); // to the newest end
    this.lastRead.set(webhook.id, { webhook, readAt });
    if (this.lastRead.size > LAST_READ_MAX) this.lastRead.delete(this.lastRead.keys().next().value!);
  }

  /** Webhooks with queued deliveries, the one served longest ago first. */
  webhookIds(): string[] {
    return [...this.lanes.keys()];
  }

  queued(webhookId: string): number {
    return this.lanes.get(webhookId)?.deliveries.length ?? 0;
  }

  isStale(webhookId: string, maxAgeMs: number, now: number): boolean {
    const lane = this.lanes.get(webhookId);
    return lane !== undefined && (lane.webhook === null || now - lane.readAt > maxAgeMs);
  }

  setWebhook(webhook: SigningWebhook, readAt: number): void {
    const lane = this.lanes.get(webhook.id);
    if (lane) this.setRead(lane, webhook, readAt);
  }

  /** Up to n jobs of one webhook, in claim order; the lane goes to the back of the turn. */
  take(webhookId: string, n: number): Job[] {
    const lane = this.lanes.get(webhookId);
    const webhook = lane?.webhook;
    if (!lane || !webhook) return []; // not read yet: isStale says so
    const taken = lane.deliveries.splice(0, n);
    this.count -= taken.length;
    for (const d of taken) this.ids.delete(d.delivery.id);
    this.lanes.delete(webhookId);
    if (lane.deliveries.length) this.lanes.set(webhookId, lane);
    return taken.map((d) => ({ ...d, webhook }));
  }

  /** Forgets a webhook's queued deliveries (and the webhook: deleted or paused); returns their ids. */
  drop(webhookId: string): string[] {
    this.lastRead.delete(webhookId);
    const lane = this.lanes.get(webhookId);
    if (!lane) return [];
    this.lanes.delete(webhookId);
    this.count -= lane.deliveries.length;
    const ids = lane.deliveries.map((d) => d.delivery.id);
    for (const id of ids) this.ids.delete(id);
    return ids;
  }

  /** Forgets everything; returns the ids (their leases are to be released). */
  clear(): string[] {
    return this.webhookIds().flatMap((id) => this.drop(id));
  }
}
