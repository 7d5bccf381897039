/**
 * The dispatcher's side of one claimed delivery: the attempt (attempt.ts),
 * made on the sender thread (send-thread.ts) over its kept-alive connections
 * (agents.ts), its result in the writer's next
 * batch (recorder.ts), the metrics and the log line. What to send next is
 * the dispatcher's business.
 */
import type { AppDeps } from '../deps';
import type { Job } from './jobs';
import { createWebhookMetrics, WebhookMetrics } from './metrics';
import { AttemptRecorder } from './recorder';
import type { Recorded } from './results';
import { SenderThread } from './send-thread';
import { signingSecrets } from './store';

type RunnerDeps = Pick<AppDeps, 'config' | 'db' | 'clock' | 'log' | 'metrics' | 'writer'>;

export class AttemptRunner {
  private readonly metrics: WebhookMetrics;
  private readonly recorder: AttemptRecorder;
  private readonly sender: SenderThread;

  /** `owner`: the dispatcher's lease owner; a result is recorded only while the lease is still its own */
  constructor(private readonly deps: RunnerDeps, private readonly owner: string) {
    const { concurrency, perWebhookConcurrency } = deps.config.webhooks;
    this.metrics = createWebhookMetrics(deps);
    this.recorder = new AttemptRecorder(deps.writer, deps.clock);
    const agents = { maxSockets: concurrency, maxFreeSockets: perWebhookConcurrency, maxAgents: Math.max(64, concurrency * 2) };
    const onThreadFailure = (reason: string, orphans: number) =>
      deps.log.warn({ reason, orphans }, 'the webhook sender thread failed; its attempts are made on the main thread');
    this.sender = new SenderThread({ config: { dns: deps.config.dns, webhooks: deps.config.webhooks }, agents }, { onThreadFailure });
  }

  /**
   * Sends one delivery and records the result; `answered` runs as soon as the answer is in, before the write.
   * Resolves with what was recorded, null when the row went meanwhile (its webhook was deleted, or the lease
   * lost), or 'aborted' when `signal` stopped the request: that is no attempt, and nothing is recorded.
   */
  async run({ delivery, webhook, body }: Job, signal: AbortSignal, answered: () => void): Promise<Recorded | null | 'aborted'> {
    const { clock, log } = this.deps;
    const attempt = delivery.attempts + 1;
    const startedAt = clock.now();
    const outcome = await this.sender.attempt(webhook.id, {
      url: webhook.url, secrets: signingSecrets(webhook, startedAt), eventId: delivery.eventId, body, attempt, now: startedAt, signal,
    });
    answered();
    if (outcome.aborted) return 'aborted';
    const recorded = await this.recorder.record({
      delivery,
      owner: this.owner,
      attempt: {
        attemptedAt: startedAt + (outcome.waitedMs ?? 0), success: outcome.success, statusCode: outcome.statusCode,
        latencyMs: outcome.latencyMs, responseBody: outcome.responseBody, error: outcome.error,
      },
    });
    if (!recorded) return null;
    this.metrics.observe(recorded.result, attempt, outcome.latencyMs);
    const fields = { deliveryId: delivery.id, webhookId: webhook.id, eventId: delivery.eventId, attempt, statusCode: outcome.statusCode, latencyMs: outcome.latencyMs };
    if (recorded.result === 'succeeded') log.info(fields, 'webhook delivered');
    else log.warn({ ...fields, error: outcome.error, result: recorded.result }, 'webhook attempt failed');
    return recorded;
  }

  /** Ends the sender thread and its kept-alive connections. */
  destroy(): Promise<void> {
    return this.sender.destroy();
  }
}
