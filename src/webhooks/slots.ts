/**
 * The dispatcher's requests in flight: at most `concurrency` in all and
 * `perWebhookConcurrency` to one webhook, so a slow or dead endpoint holds its
 * own slots only. Each holds the AbortController that stop() uses.
 */
export interface SlotLimits {
  concurrency: number;
  perWebhookConcurrency: number;
}

export class Slots {
  /** by delivery id */
  private readonly sending = new Map<string, { webhookId: string; controller: AbortController }>();
  private readonly perWebhook = new Map<string, number>();

  constructor(private readonly limits: SlotLimits) {}

  get size(): number {
    return this.sending.size;
  }

  full(): boolean {
    return this.sending.size >= this.limits.concurrency;
  }

  has(deliveryId: string): boolean {
    return this.sending.has(deliveryId);
  }

  /** Requests in flight to one webhook. */
  inFlight(webhookId: string): number {
    return this.perWebhook.get(webhookId) ?? 0;
  }

  /** Whether the webhook is below its own limit (the global one aside). */
  hasOwnRoom(webhookId: string): boolean {
    return this.inFlight(webhookId) < this.limits.perWebhookConcurrency;
  }

  /** How many more requests to this webhook may start now, under both limits. */
  room(webhookId: string): number {
    return Math.min(this.limits.concurrency - this.sending.size, this.limits.perWebhookConcurrency - this.inFlight(webhookId));
  }

  /** Webhooks with requests in flight. */
  webhookIds(): IterableIterator<string> {
    return this.perWebhook.keys();
  }

  /** Takes a slot for a delivery; the controller aborts its request. */
  take(deliveryId: string, webhookId: string): AbortController {
    const controller = new AbortController();
    this.sending.set(deliveryId, { webhookId, controller });
    this.perWebhook.set(webhookId, this.inFlight(webhookId) + 1);
    return controller;
  }

  /** Frees a delivery's slot; false when it held none (already freed). */
  release(deliveryId: string): boolean {
    const held = this.sending.get(deliveryId);
    if (!held) return false;
    this.sending.delete(deliveryId);
    const left = this.inFlight(held.webhookId) - 1;
    if (left > 0) this.perWebhook.set(held.webhookId, left);
    else this.perWebhook.delete(held.webhookId);
    return true;
  }

  abortAll(): void {
    for (const s of this.sending.values()) s.controller.abort();
  }
}
