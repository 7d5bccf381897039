/**
 * GET /v1/overview: the console's first screen in one request. Every part is
 * a bounded read (30 day rollup rows, the queue by status, a few alerts).
 */
import { z } from 'zod';
import type { AppDeps } from '../deps';
import type { ApiRouter } from '../http/api';
import { domainAlerts, ipOverview, webhookAlerts } from './alerts';
import { dailyCounts, DESTINATIONS_LISTED, queueCounts } from './counts';

const counts = z.object({
  sent: z.number().int(), delivered: z.number().int(), bounced: z.number().int().describe('Hard and soft bounces.'),
  complained: z.number().int(), opened: z.number().int().describe('Unique opens.'),
});

const overviewSchema = z.object({
  today: counts.describe('The current UTC day.'),
  last_30_days: counts,
  daily: z.array(counts.extend({ date: z.string().describe('YYYY-MM-DD (UTC)') })).describe('30 UTC days, oldest first, today last.'),
  queue: z.object({ queued: z.number().int(), deferred: z.number().int(), scheduled: z.number().int() }),
  deferred_by_destination: z.array(z.object({ domain: z.string(), count: z.number().int() }))
    .describe(`Recipient domains with the most deferred messages (at most ${DESTINATIONS_LISTED}).`),
  warmup: z.array(z.object({
    pool: z.string(), ip: z.string(), day: z.number().int().nullable(), cap: z.number().int().nullable(),
    sent_today: z.number().int(), status: z.enum(['warming', 'paused']),
  })).describe('Addresses this account sends from that are warming up.'),
  alerts: z.array(z.object({ kind: z.enum(['domain_dns', 'ip_throttled', 'webhook_failing']), subject: z.string(), detail: z.string() })),
});

export function registerOverviewRoutes(api: ApiRouter, deps: AppDeps): void {
  const { reader, clock, config } = deps;
  api.add({
    method: 'get', path: '/v1/overview', scope: 'analytics:read', tag: 'Analytics', extension: true,
    summary: 'Overview of the account',
    description: 'Sent, delivered, bounced, complained and opened today and over the last 30 UTC days (with the daily series), ' +
      'the queue, the destinations with most deferred mail, warm-up progress, and alerts: a sending domain failing DNS, ' +
      'a source address in a throttling cool-down, a webhook with failed deliveries in the last 24 h or being retried. ' +
      'For the caller\'s account and mode.',
    responses: { 200: { description: 'The overview', schema: overviewSchema } },
    async handler({ caller }) {
      const scope = { accountId: caller.accountId, mode: caller.mode };
      const now = clock.now();
      await deps.writer.flushCounters(); // this node's summed counts first (writer.ts counterFlushMs)
      const [days, queue, domains, webhooks, ips] = await Promise.all([
        dailyCounts(reader, scope, now), queueCounts(reader, scope), domainAlerts(reader, scope), webhookAlerts(reader, scope, now), ipOverview(reader, config, scope, now),
      ]);
      return {
        status: 200,
        body: {
          today: days.today, last_30_days: days.last30Days, daily: days.daily,
          queue: queue.queue, deferred_by_destination: queue.deferredByDestination,
          warmup: ips.warmup, alerts: [...domains, ...ips.alerts, ...webhooks],
        },
      };
    },
  });
}
