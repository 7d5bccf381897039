/**
 * Webhook metrics on the app's registry: attempts by result and attempt
 * number, request latency, and the pending backlog with the age of its oldest
 * row (read from the database when scraped, so they are right after a restart).
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import type { AppDeps } from '../deps';
import type { AttemptResult } from './results';
import { pendingStats } from './deliveries';

export interface WebhookMetrics {
  observe(result: AttemptResult, attempt: number, latencyMs: number): void;
}

export function createWebhookMetrics(deps: Pick<AppDeps, 'db' | 'clock' | 'metrics'>): WebhookMetrics {
  const registers = [deps.metrics.registry];
  const attempts = new Counter({
    name: 'pigeon_webhook_attempts_total',
    help: 'Webhook delivery attempts by result (succeeded, retrying, failed) and attempt number',
    labelNames: ['result', 'attempt'],
    registers,
  });
  const latency = new Histogram({
    name: 'pigeon_webhook_request_duration_seconds',
    help: 'Time from connect to the receiver\'s answer',
    labelNames: ['result'],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  new Gauge({
    name: 'pigeon_webhook_pending_deliveries',
    help: 'Deliveries waiting for their first attempt or a retry',
    registers,
    async collect() {
      this.set((await pendingStats(deps.db)).pending);
    },
  });
  new Gauge({
    name: 'pigeon_webhook_oldest_pending_age_seconds',
    help: 'Age of the oldest pending delivery (0 when none)',
    registers,
    async collect() {
      const { oldestCreatedAt } = await pendingStats(deps.db);
      this.set(oldestCreatedAt === null ? 0 : Math.max(0, (deps.clock.now() - oldestCreatedAt) / 1000));
    },
  });
  return {
    observe(result, attempt, latencyMs) {
      attempts.inc({ result, attempt: attempt > 6 ? '7+' : String(attempt) });
      latency.observe({ result: result === 'succeeded' ? 'success' : 'failure' }, latencyMs / 1000);
    },
  };
}
