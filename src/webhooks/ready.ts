/**
 * The dispatcher's memory of claimed work: deliveries it holds the lease on
 * and has not started yet, one lane per webhook, with the webhook (url and
 * opened secrets) as read at claim time. Lanes are served in turn so one
 * webhook's batch cannot keep the global slots from the others. A lane's
 * webhook is re-read when it is older than a second (see the dispatcher), so
 * a changed url, a rotated secret or a pause reaches queued deliveries too.
 */
import type { Delivery } from './deliveries';
import type { Job } from './jobs';
import type { SigningWebhook } from './store';

interface Lane {
  webhook: SigningWebhook;
  /** performance.now() when the webhook was read */
  readAt: number;
  deliveries: Array<{ delivery: Delivery; body: string }>;
}

export class ReadyQueue {
  private readonly lanes = new Map<string, Lane>();
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
      if (this.ids.has(delivery.id) || inFlight(delivery.id)) continue;
      this.ids.add(delivery.id);
      let lane = this.lanes.get(webhook.id);
      if (!lane) this.lanes.set(webhook.id, (lane = { webhook, readAt, deliveries: [] }));
      lane.webhook = webhook;
      lane.readAt = readAt;
      lane.deliveries.push({ delivery, body });
      this.count++;
    }
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
    return lane !== undefined && now - lane.readAt > maxAgeMs;
  }

  setWebhook(webhook: SigningWebhook, readAt: number): void {
    const lane = this.lanes.get(webhook.id);
    if (lane) Object.assign(lane, { webhook, readAt });
  }

  /** Up to n jobs of one webhook, in claim order; the lane goes to the back of the turn. */
  take(webhookId: string, n: number): Job[] {
    const lane = this.lanes.get(webhookId);
    if (!lane) return [];
    const taken = lane.deliveries.splice(0, n);
    this.count -= taken.length;
    for (const d of taken) this.ids.delete(d.delivery.id);
    this.lanes.delete(webhookId);
    if (lane.deliveries.length) this.lanes.set(webhookId, lane);
    return taken.map((d) => ({ ...d, webhook: lane.webhook }));
  }

  /** Forgets a webhook's queued deliveries; returns their ids. */
  drop(webhookId: string): string[] {
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
