/** The operator's queue by destination, and pausing/resuming a destination. */
import { z } from 'zod';
import { iso } from '../clock';
import type { AppDeps } from '../deps';
import type { ApiRouter } from '../http/api';
import { notFound } from '../http/errors';
import { normalizeDomain } from '../messages/addresses';
import { DESTINATIONS_MAX, pauseDestination, queueByDestination, resumeDestination } from './queue';
import { OPERATOR, OPERATOR_NOTE } from './spec';

const domainParam = z.object({ domain: z.string().min(1).max(253).describe('A recipient domain, e.g. gmail.com.') });
const destinationSchema = z.object({
  domain: z.string(), queued: z.number().int().describe('Waiting for a first attempt (queued, scheduled or being sent).'),
  deferred: z.number().int(), oldest_at: z.string().nullable(), paused: z.boolean(), last_error: z.string().nullable().describe('The reply of the latest deferral.'),
});

export function registerOperatorQueueRoutes(api: ApiRouter, deps: AppDeps): void {
  const { db, reader, clock, signals } = deps;
  const domainOf = (raw: string) => normalizeDomain(raw) ?? raw.toLowerCase();

  api.add({
    ...OPERATOR, method: 'get', path: '/v1/operator/queue', summary: 'The queue by destination',
    description: `Messages waiting, of every account, by recipient domain (at most ${DESTINATIONS_MAX}, most waiting first), and every paused destination. ${OPERATOR_NOTE}`,
    responses: { 200: { description: 'Destinations', schema: z.object({ data: z.array(destinationSchema) }) } },
    async handler() {
      const rows = await queueByDestination(reader);
      const data = rows.map((r) => ({ domain: r.domain, queued: r.queued, deferred: r.deferred, oldest_at: iso(r.oldestAt), paused: r.paused, last_error: r.lastError }));
      return { status: 200, body: { data } };
    },
  });

  api.add({
    ...OPERATOR, method: 'post', path: '/v1/operator/queue/{domain}/pause', summary: 'Pause a destination',
    description: `The MTA claims no message for this recipient domain until it is resumed; they wait in the queue. Persists across restarts. ${OPERATOR_NOTE}`,
    params: domainParam,
    responses: { 200: { description: 'Paused', schema: z.object({ domain: z.string(), paused: z.boolean() }) } },
    async handler({ params, caller }) {
      const domain = domainOf(params.domain);
      await pauseDestination(db, domain, caller.user?.id ?? caller.keyId, clock.now());
      return { status: 200, body: { domain, paused: true } };
    },
  });

  api.add({
    ...OPERATOR, method: 'post', path: '/v1/operator/queue/{domain}/resume', summary: 'Resume a destination',
    description: `Its messages are claimed again at once. 404 when the destination is not paused. ${OPERATOR_NOTE}`,
    params: domainParam,
    responses: { 200: { description: 'Resumed', schema: z.object({ domain: z.string(), paused: z.boolean() }) } },
    async handler({ params }) {
      const domain = domainOf(params.domain);
      if (!(await resumeDestination(db, domain))) throw notFound('paused destination', 'domain');
      signals.emit('queueChanged');
      return { status: 200, body: { domain, paused: false } };
    },
  });
}
