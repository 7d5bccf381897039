/** Routes of the analytics module (scope analytics:read): stats, timeseries, breakdown by domain, export. */
import { z } from 'zod';
import type { AppDeps } from '../deps';
import type { ApiRouter } from '../http/api';
import { pageSchema, paginationQuery, toPage } from '../http/pagination';
import { iso } from '../clock';
import { Counts, METRICS } from './rollup';
import { AnalyticsScope, rangeQuery, resolveQuery } from './range';
import { readDomains, readTotals } from './queries';
import { readSeries } from './series';
import { buildBuckets, formatLocal } from './time';
import { exportStream } from './export';

const METRIC_HELP: Record<string, string> = {
  sent: 'message.sent events: a recipient MX accepted the envelope.',
  delivered: 'message.delivered events.',
  bounced_hard: 'message.bounced events with type hard.',
  bounced_soft: 'message.bounced events with type soft.',
  complained: 'message.complained events.',
  opened_total: 'Every message.opened event (prefetches included).',
  opened_unique: 'Messages opened at least once.',
  clicked_total: 'Every message.clicked event.',
  clicked_unique: 'Messages with at least one click.',
  suppressed: 'Sends stopped because the recipient is on the suppression list.',
  deferred: 'Temporary delivery failures (each one is retried).',
};

const metricsSchema = z.object(Object.fromEntries(METRICS.map((m) => [m, z.number().int().describe(METRIC_HELP[m])])));

const ratesSchema = z.object({
  delivery_rate: z.number().describe('delivered / (delivered + bounced_hard + bounced_soft)'),
  bounce_rate: z.number().describe('(bounced_hard + bounced_soft) / (delivered + bounced_hard + bounced_soft)'),
  complaint_rate: z.number().describe('complained / delivered'),
  open_rate: z.number().describe('opened_unique / delivered'),
  click_rate: z.number().describe('clicked_unique / delivered'),
});

const ratio = (a: number, b: number): number => (b > 0 ? Math.round((a / b) * 10_000) / 10_000 : 0);

export function rates(c: Counts): z.infer<typeof ratesSchema> {
  const bounced = c.bounced_hard + c.bounced_soft;
  const outcomes = c.delivered + bounced;
  return {
    delivery_rate: ratio(c.delivered, outcomes),
    bounce_rate: ratio(bounced, outcomes),
    complaint_rate: ratio(c.complained, c.delivered),
    open_rate: ratio(c.opened_unique, c.delivered),
    click_rate: ratio(c.clicked_unique, c.delivered),
  };
}

const rangeSchema = {
  from: z.string().describe('Start of the counted range (inclusive), widened to a whole UTC hour.'),
  to: z.string().describe('End of the counted range (exclusive), widened to a whole UTC hour.'),
  tz: z.string(),
  filters: z.object({ domain: z.string().nullable(), tag: z.string().nullable(), ip_pool: z.string().nullable() }),
};

function rangeBody(scope: AnalyticsScope) {
  return {
    from: iso(scope.from) as string,
    to: iso(scope.to) as string,
    tz: scope.tz,
    filters: { domain: scope.sendingDomain ?? null, tag: scope.tag || null, ip_pool: scope.ipPool ?? null },
  };
}

const NOTE = 'Counts are per account and per mode of the calling key, by the time each event happened. ' +
  'With several nodes on one PostgreSQL database, another node\'s events are counted within `database.counterFlushMs` (1 s by default).';

export function registerAnalyticsRoutes(api: ApiRouter, deps: AppDeps): void {
  const { reader: db, clock } = deps; // every route here only reads

  api.add({
    method: 'get', path: '/v1/analytics/stats', scope: 'analytics:read', tag: 'Analytics',
    summary: 'Overall stats', description: NOTE,
    query: z.object(rangeQuery),
    responses: { 200: { description: 'Totals and rates', schema: z.object({ ...rangeSchema, metrics: metricsSchema, rates: ratesSchema }) } },
    async handler({ query, caller }) {
      const scope = resolveQuery(query, caller, clock.now());
      await deps.writer.flushCounters(); // this node's summed counts first (writer.ts counterFlushMs)
      const counts = await readTotals(db, scope);
      return { status: 200, body: { ...rangeBody(scope), metrics: counts, rates: rates(counts) } };
    },
  });

  api.add({
    method: 'get', path: '/v1/analytics/timeseries', scope: 'analytics:read', tag: 'Analytics',
    summary: 'Time-series data',
    description: `${NOTE} Buckets are built in \`tz\` (days follow its DST changes; weeks start on Monday); empty buckets are included.`,
    query: z.object({ ...rangeQuery, interval: z.enum(['hour', 'day', 'week']).default('day').describe('Bucket size (default day).') }),
    responses: {
      200: {
        description: 'One entry per bucket, oldest first',
        schema: z.object({
          ...rangeSchema,
          interval: z.enum(['hour', 'day', 'week']),
          data: z.array(z.object({
            start: z.string().describe('Bucket start in `tz`, ISO 8601 with offset.'),
            end: z.string().describe('Bucket end (exclusive) in `tz`.'),
            metrics: metricsSchema,
          })),
        }),
      },
    },
    async handler({ query, caller }) {
      const scope = resolveQuery(query, caller, clock.now());
      await deps.writer.flushCounters();
      const buckets = buildBuckets(scope.from, scope.to, query.interval, scope.tz);
      const series = await readSeries(db, scope, buckets, query.interval === 'hour');
      const data = buckets.map((b, i) => ({ start: formatLocal(b.start, b.startOffset), end: formatLocal(b.end, b.endOffset), metrics: series[i] }));
      return { status: 200, body: { ...rangeBody(scope), interval: query.interval, data } };
    },
  });

  api.add({
    method: 'get', path: '/v1/analytics/breakdown/domains', scope: 'analytics:read', tag: 'Analytics',
    summary: 'Breakdown by recipient domain',
    description: `${NOTE} Sorted by sent, most first (ties by domain name); the cursor is the last domain of the previous page.`,
    query: z.object({ ...rangeQuery, ...paginationQuery }),
    responses: {
      200: {
        description: 'A page of recipient domains',
        schema: pageSchema(z.object({ recipient_domain: z.string(), metrics: metricsSchema, rates: ratesSchema })),
      },
    },
    async handler({ query, caller }) {
      const scope = resolveQuery(query, caller, clock.now());
      await deps.writer.flushCounters();
      const { rows, total } = await readDomains(db, scope, query.limit + 1, query.cursor);
      const page = toPage(rows, query.limit, total, (r) => r.recipientDomain, (r) => ({
        recipient_domain: r.recipientDomain, metrics: r.counts, rates: rates(r.counts),
      }));
      return { status: 200, body: page };
    },
  });

  api.add({
    method: 'get', path: '/v1/analytics/export', scope: 'analytics:read', tag: 'Analytics',
    summary: 'Export data',
    description: `${NOTE} Streams every event (by event time) or message (by creation time) in the range. ` +
      'CSV has a header row; structured cells (tags, data, metadata) hold JSON; a cell starting with = + - @ gets a leading apostrophe. ' +
      'JSON is one array of objects.',
    query: z.object({
      ...rangeQuery,
      format: z.enum(['csv', 'json']).default('csv').describe('csv (default) or json.'),
      kind: z.enum(['events', 'messages']).default('events').describe('events (default) or messages.'),
    }),
    responses: {
      200: { description: 'The rows, streamed', schema: z.string(), contentType: 'text/csv' },
    },
    async handler({ query, caller, ctx }) {
      const scope = resolveQuery(query, caller, clock.now());
      const name = `pigeon-${query.kind}-${iso(scope.from)?.slice(0, 13)}-${iso(scope.to)?.slice(0, 13)}.${query.format}`.replace(/:/g, '');
      ctx.status = 200;
      ctx.type = query.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8';
      ctx.set('Content-Disposition', `attachment; filename="${name}"`);
      ctx.set('Cache-Control', 'no-store');
      const stream = exportStream(db, scope, query.kind, query.format);
      stream.on('error', (err) => deps.log.error({ err, route: '/v1/analytics/export' }, 'export stream failed'));
      ctx.body = stream;
      return undefined;
    },
  });
}
