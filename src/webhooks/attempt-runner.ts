/**
 * The dispatcher's side of one claimed delivery: the attempt (attempt.ts)
 * over kept-alive connections (agents.ts), its result in the writer's next
 * batch (recorder.ts), the metrics and the log line. What to send next is
 * the dispatcher's business.
 */
import type { AppDeps } from '../deps';
import { EndpointAgents } from './agents';
import { attemptDelivery } from './attempt';
import type { Job } from './jobs';
import { createWebhookMetrics, WebhookMetrics } from './metrics';
import { AttemptRecorder } from './recorder';
import type { Recorded } from './results';
import { signingSecrets } from './store';

type RunnerDeps = Pick<AppDeps, 'config' | 'db' | 'clock' | 'log' | 'metrics' | 'writer'>;

export class AttemptRunner {
  private readonly metrics: WebhookMetrics;
  private readonly recorder: AttemptRecorder;
  private readonly agents: EndpointAgents;

  /** `owner`: the dispatcher's lease owner; a result is recorded only while the lease is still its own */
  constructor(private readonly deps: RunnerDeps, private readonly owner: string) {
    const { concurrency, perWebhookConcurrency } = deps.config.webhooks;
    this.metrics = createWebhookMetrics(deps);
    this.recorder = new AttemptRecorder(deps.writer, deps.clock);
    this.agents = new EndpointAgents({ maxSockets: concurrency, maxFreeSockets: perWebhookConcurrency, maxAgents: Math.max(64, concurrency * 2) });
  }

  /**
   * Sends one delivery and records the result; `answered` runs as soon as the answer is in, before the write.
   * Resolves with what was recorded, null when the row went meanwhile (its webhook was deleted, or the lease
   * lost), or 'aborted' when `signal` stopped the request: that is no attempt, and nothing is recorded.
   */
  async run({ delivery, webhook, body }: Job, signal: AbortSignal, answered: () => void): Promise<Recorded | null | 'aborted'> {
    const { config, clock, log } = this.deps;
    const attempt = delivery.attempts + 1;
    const startedAt = clock.now();
    const outcome = await attemptDelivery(config, {
      url: webhook.url, secrets: signingSecrets(webhook, startedAt), eventId: delivery.eventId, body, attempt, now: startedAt, signal,
    }, this.agents);
    answered();
    if (outcome.aborted) return 'aborted';
    const recorded = await this.recorder.record({
      delivery,
      owner: this.owner,
      attempt: {
        attemptedAt: startedAt, success: outcome.success, statusCode: outcome.statusCode,
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

  /** Closes the kept-alive connections. */
  destroy(): void {
    this.agents.destroy();
  }
}
