/**
 * Routes of the webhooks module: parse → service → shape. All need `webhooks:manage`.
 * A webhook takes the mode of the key that creates it and receives only that
 * mode's events; keys see only webhooks of their own mode (the caller is the owner).
 */
import { z } from 'zod';
import type { AppDeps } from '../deps';
import type { ApiRouter } from '../http/api';
import { pageSchema, paginationQuery, toPage } from '../http/pagination';
import { iso } from '../clock';
import { EVENT_TYPES } from '../events/schemas';
import { REDELIVER_FAILED_MAX, requestBodyOf, attemptsOf, listDeliveries, Attempt, Delivery } from './deliveries';
import { createWebhook, patchWebhook, redeliver, redeliverFailed, removeWebhook, requireDelivery, requireWebhook, sendTestEvent } from './service';
import { listWebhooks, Webhook } from './store';

const eventName = z.enum([...EVENT_TYPES, '*'], {
  error: (issue) => `unknown event type '${String(issue.input)}'; expected one of ${EVENT_TYPES.join(', ')} or *`,
});
const events = z.array(eventName).min(1, 'events must name at least one event type').max(EVENT_TYPES.length + 1)
  .describe('Event types to receive, or `*` for the seven of the spec. The extensions message.deferred, ip.listed and ip.delisted are received only when named.');
const url = z.string().max(2048).describe('HTTPS URL that receives a POST per event. Must resolve to a public address.');
const secret = z.string().min(16, 'secret must be at least 16 characters').max(256)
  .describe('Signing secret (16+ characters). Omit it to have a `whsec_` secret generated.');

const webhookSchema = z.object({
  id: z.string().describe('Webhook identifier, prefix `wh_`.'),
  url: z.string(),
  mode: z.enum(['test', 'live']).describe('Pigeon extension. The mode of the key that created the webhook: it receives only ' +
    'events of that mode (test: sandbox events, live: live events), and only keys of that mode can see or change it.'),
  events: z.array(z.string()),
  enabled: z.boolean().describe('Disabled webhooks get no new deliveries; pending ones wait until re-enabled.'),
  created_at: z.string(),
  updated_at: z.string(),
  previous_secret_expires_at: z.string().nullable()
    .describe('While a rotated-out secret still signs (a second v1= in Service-Signature): until when.'),
});
const withSecret = webhookSchema.extend({ secret: z.string().describe('The signing secret. Shown in this response only.') });

const shapeWebhook = (w: Webhook, now: number): z.infer<typeof webhookSchema> => ({
  id: w.id,
  url: w.url,
  mode: w.mode,
  events: w.events,
  enabled: w.enabled,
  created_at: iso(w.createdAt) as string,
  updated_at: iso(w.updatedAt) as string,
  previous_secret_expires_at: w.previousSecretExpiresAt !== null && w.previousSecretExpiresAt > now ? iso(w.previousSecretExpiresAt) : null,
});

const attemptSchema = z.object({
  attempt: z.number().int().describe('1-based, as sent in Service-Delivery-Attempt.'),
  attempted_at: z.string(),
  success: z.boolean(),
  status_code: z.number().int().nullable(),
  latency_ms: z.number().int(),
  response_body: z.string().nullable().describe('The first 1 KB of the answer.'),
  error: z.string().nullable(),
});
const deliverySchema = z.object({
  id: z.string().describe('Delivery identifier, prefix `whd_`.'),
  webhook_id: z.string(),
  event_id: z.string(),
  event_type: z.string(),
  status: z.enum(['pending', 'succeeded', 'failed']),
  attempts: z.number().int(),
  next_attempt_at: z.string().nullable(),
  last_status_code: z.number().int().nullable(),
  last_error: z.string().nullable(),
  created_at: z.string(),
  completed_at: z.string().nullable(),
  attempt_log: z.array(attemptSchema),
});
const deliveryDetailSchema = deliverySchema.extend({
  request_body: z.string().nullable().describe('The JSON body every attempt of this delivery sends (rebuilt from its event).'),
});

const shapeAttempt = (a: Attempt): z.infer<typeof attemptSchema> => ({
  attempt: a.attempt,
  attempted_at: iso(a.attemptedAt) as string,
  success: a.success,
  status_code: a.statusCode,
  latency_ms: a.latencyMs,
  response_body: a.responseBody,
  error: a.error,
});

const shapeDelivery = (d: Delivery, log: Attempt[]): z.infer<typeof deliverySchema> => ({
  id: d.id,
  webhook_id: d.webhookId,
  event_id: d.eventId,
  event_type: d.eventType,
  status: d.status,
  attempts: d.attempts,
  next_attempt_at: iso(d.nextAttemptAt),
  last_status_code: d.lastStatusCode,
  last_error: d.lastError,
  created_at: iso(d.createdAt) as string,
  completed_at: iso(d.completedAt),
  attempt_log: log.map(shapeAttempt),
});

const idParams = z.object({ id: z.string().max(64).describe('Webhook id.') });
const deliveryParams = idParams.extend({ delivery_id: z.string().max(64).describe('Delivery id.') });

export function registerWebhookRoutes(api: ApiRouter, deps: AppDeps): void {
  const { db, clock } = deps;
  const base = { scope: 'webhooks:manage', tag: 'Webhooks' } as const;

  api.add({
    ...base, method: 'post', path: '/v1/webhooks', summary: 'Create a webhook',
    description: 'The URL must be HTTPS and resolve to a public address. The response carries the signing secret, once. ' +
      'The webhook takes the mode of the calling key: a sandbox key\'s webhook receives sandbox events only, a live key\'s live events only. ' +
      'It receives every event recorded after this response (a message accepted earlier brings its later events), none recorded before. ' +
      '409 limit_reached beyond limits.webhooksPerAccount webhooks per mode.',
    body: z.strictObject({ url, events, secret: secret.optional() }),
    responses: { 201: { description: 'Created', schema: withSecret } },
    async handler({ body, caller }) {
      const { webhook, secret: s } = await createWebhook(deps, caller, body);
      return { status: 201, body: { ...shapeWebhook(webhook, clock.now()), secret: s } };
    },
  });

  api.add({
    ...base, method: 'get', path: '/v1/webhooks', summary: 'List webhooks', description: 'Only the webhooks of the calling key\'s mode.', query: z.object(paginationQuery),
    responses: { 200: { description: 'A page of webhooks', schema: pageSchema(webhookSchema) } },
    async handler({ query, caller }) {
      const page = await listWebhooks(db, caller, query.limit + 1, query.cursor);
      return { status: 200, body: toPage(page.items, query.limit, page.total, (w) => w.id, (w) => shapeWebhook(w, clock.now())) };
    },
  });

  api.add({
    ...base, method: 'get', path: '/v1/webhooks/{id}', summary: 'Get a webhook', extension: true, params: idParams,
    responses: { 200: { description: 'The webhook', schema: webhookSchema } },
    async handler({ params, caller }) {
      return { status: 200, body: shapeWebhook(await requireWebhook(deps, caller, params.id), clock.now()) };
    },
  });

  api.add({
    ...base, method: 'patch', path: '/v1/webhooks/{id}', summary: 'Change a webhook', extension: true, params: idParams,
    description: 'Change url, events or enabled, or rotate the secret (`rotate_secret: true` generates one, `secret` sets one). ' +
      'After a rotation the old secret keeps signing for 24 hours as a second v1= value; the new secret is in this response only. ' +
      'A change of events or enabled applies to every event recorded after this response.',
    body: z.strictObject({
      url: url.optional(),
      events: events.optional(),
      enabled: z.boolean().optional(),
      rotate_secret: z.literal(true).optional().describe('Generate a new secret.'),
      secret: secret.optional().describe('Rotate to this secret (16+ characters).'),
    }),
    responses: { 200: { description: 'The changed webhook', schema: webhookSchema.extend({ secret: z.string().optional().describe('The new secret, after a rotation.') }) } },
    async handler({ params, body, caller }) {
      const { webhook, secret: s } = await patchWebhook(deps, caller, params.id, body);
      return { status: 200, body: { ...shapeWebhook(webhook, clock.now()), ...(s !== undefined ? { secret: s } : {}) } };
    },
  });

  api.add({
    ...base, method: 'delete', path: '/v1/webhooks/{id}', summary: 'Delete a webhook', params: idParams,
    description: 'Pending deliveries of the webhook are dropped with it; no event recorded after this response goes to it.',
    responses: { 200: { description: 'Deleted', schema: z.object({ id: z.string(), deleted: z.literal(true) }) } },
    async handler({ params, caller }) {
      await removeWebhook(deps, caller, params.id);
      return { status: 200, body: { id: params.id, deleted: true } };
    },
  });

  api.add({
    ...base, method: 'post', path: '/v1/webhooks/{id}/test', summary: 'Send a test event', params: idParams,
    description: 'Sends a signed envelope with `"test": true` and sample data now, and reports how the receiver answered. Nothing is stored or retried.',
    query: z.object({ event: z.enum(EVENT_TYPES).default('message.delivered').describe('Event type of the test envelope.') }),
    responses: {
      200: {
        description: 'How the receiver answered',
        schema: z.object({
          success: z.boolean().describe('True for a 2xx answer within the timeout.'),
          status_code: z.number().int().nullable(),
          latency_ms: z.number().int(),
          error: z.string().optional(),
          event_id: z.string(),
        }),
      },
    },
    async handler({ params, query, caller }) {
      const r = await sendTestEvent(deps, caller, params.id, query.event);
      const body = { success: r.success, status_code: r.statusCode, latency_ms: r.latencyMs, ...(r.error ? { error: r.error } : {}), event_id: r.eventId };
      return { status: 200, body };
    },
  });

  api.add({
    ...base, method: 'get', path: '/v1/webhooks/{id}/deliveries', summary: 'List deliveries of a webhook', extension: true, params: idParams,
    query: z.object({ ...paginationQuery, status: z.enum(['pending', 'succeeded', 'failed']).optional().describe('Only deliveries in this state.') }),
    responses: { 200: { description: 'A page of deliveries, newest first, each with its attempts', schema: pageSchema(deliverySchema) } },
    async handler({ params, query, caller }) {
      const webhook = await requireWebhook(deps, caller, params.id);
      const page = await listDeliveries(db, webhook.id, { status: query.status, limit: query.limit + 1, cursor: query.cursor });
      const logs = await attemptsOf(db, page.items.map((d) => d.id));
      return { status: 200, body: toPage(page.items, query.limit, page.total, (d) => d.id, (d) => shapeDelivery(d, logs.get(d.id) ?? [])) };
    },
  });

  api.add({
    ...base, method: 'get', path: '/v1/webhooks/{id}/deliveries/{delivery_id}', summary: 'Get a delivery', extension: true, params: deliveryParams,
    description: 'The delivery, its request body, and each attempt with the response status and the first 1 KB of the response body.',
    responses: { 200: { description: 'The delivery with its attempts', schema: deliveryDetailSchema } },
    async handler({ params, caller }) {
      const delivery = await requireDelivery(deps, await requireWebhook(deps, caller, params.id), params.delivery_id);
      const logs = await attemptsOf(db, [delivery.id]);
      const body = { ...shapeDelivery(delivery, logs.get(delivery.id) ?? []), request_body: await requestBodyOf(db, delivery.eventId) };
      return { status: 200, body };
    },
  });

  api.add({
    ...base, method: 'post', path: '/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver', summary: 'Redeliver', extension: true, params: deliveryParams,
    description: 'Queues the delivery for an attempt now, with a fresh cycle of the retry schedule. 409 while an attempt is in flight.',
    responses: { 202: { description: 'Queued', schema: deliverySchema } },
    async handler({ params, caller }) {
      const delivery = await redeliver(deps, await requireWebhook(deps, caller, params.id), params.delivery_id);
      const logs = await attemptsOf(db, [delivery.id]);
      return { status: 202, body: shapeDelivery(delivery, logs.get(delivery.id) ?? []) };
    },
  });

  api.add({
    ...base, method: 'post', path: '/v1/webhooks/{id}/redeliver-failed', summary: 'Redeliver every failed delivery', extension: true, params: idParams,
    description: `Queues each failed delivery of the webhook (the newest ${REDELIVER_FAILED_MAX} at most per call) for an attempt now, ` +
      'each with a fresh cycle of the retry schedule, and answers how many were queued.',
    responses: { 202: { description: 'Queued', schema: z.object({ queued: z.number().int() }) } },
    async handler({ params, caller }) {
      return { status: 202, body: { queued: await redeliverFailed(deps, await requireWebhook(deps, caller, params.id)) } };
    },
  });
}
