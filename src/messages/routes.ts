/**
 * Routes of the messages module: send, get, list, cancel (SPEC.md part 4)
 * and stored templates (extension). Each handler parses, calls the service
 * and shapes the answer.
 */
import { z } from 'zod';
import type { AppDeps } from '../deps';
import type { ApiRouter } from '../http/api';
import { conflict, notFound } from '../http/errors';
import { pageSchema, paginationQuery, toPage } from '../http/pagination';
import { normalizeDomain } from './addresses';
import { idempotencyKeyOf } from './idempotency';
import { attemptsOf, cancelMessage, eventsOf, getMessage, listMessages } from './repository';
import { listFilters, messageDetailSchema, messageSchema, sendBodySchema, sendResponse } from './schemas';
import { sendMessages } from './send';
import { shapeAttempt, shapeEvent, shapeMessage } from './shape';
import { registerTemplateRoutes } from './template-routes';
import { registerMessageActionRoutes } from './action-routes';

const idParam = z.object({ id: z.string().min(1).max(64).describe('The `msg_` id.') });

/** Filters compare addresses with the domain normalised the way it was stored. */
function normalizeAddressFilter(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const at = value.lastIndexOf('@');
  if (at < 0) return value;
  return `${value.slice(0, at)}@${normalizeDomain(value.slice(at + 1)) ?? value.slice(at + 1).toLowerCase()}`;
}

export function registerMessageRoutes(api: ApiRouter, deps: AppDeps): void {
  // GETs read through the reader: a send is answered only once committed, so its GET finds it.
  const { db, reader, clock, config } = deps;

  api.add({
    method: 'post', path: '/v1/messages/send', scope: 'messages:send', tag: 'Messages',
    summary: 'Send a transactional email',
    description: 'Creates one message per recipient (to, cc and bcc), each with its own id, and answers 202 once they are stored. '
      + 'Send an `Idempotency-Key` header (1–255 printable characters) to make retries safe: the same key and body within 24 hours '
      + 'return the first response (with `Idempotent-Replayed: true`); the same key with another body is a 422; '
      + 'a second request while the first is in progress is a 409.',
    body: sendBodySchema(config),
    bodyLimitBytes: Math.round(config.limits.maxMessageBytes * 1.4) + 64 * 1024,
    responses: {
      202: { description: 'Accepted: one entry per recipient, in request order', schema: sendResponse },
      409: { description: 'A request with this Idempotency-Key is in progress' },
      413: { description: 'The request body or the built message is too large (message_too_large)' },
      503: { description: 'Too many large templates are compiling (compiler_busy); retry after Retry-After' },
    },
    async handler({ body, caller, ctx }) {
      const key = idempotencyKeyOf(ctx.get('idempotency-key'));
      const result = await sendMessages(deps, caller, body, key);
      return { status: result.status, body: result.body, headers: result.replayed ? { 'Idempotent-Replayed': 'true' } : undefined };
    },
  });

  api.add({
    method: 'get', path: '/v1/messages/{id}', scope: 'messages:read', tag: 'Messages',
    summary: 'Get message status',
    description: 'The message with its delivery attempts and its events. Messages of the other mode and of other accounts are not found.',
    params: idParam,
    responses: { 200: { description: 'The message', schema: messageDetailSchema }, 404: { description: 'No such message' } },
    async handler({ params, caller }) {
      const message = await getMessage(reader, caller, params.id);
      if (!message) throw notFound('message', 'id');
      const [attempts, events] = await Promise.all([attemptsOf(reader, message.id), eventsOf(reader, caller, message.id)]);
      return { status: 200, body: { ...shapeMessage(message), attempts: attempts.map(shapeAttempt), events: events.map(shapeEvent) } };
    },
  });

  api.add({
    method: 'get', path: '/v1/messages', scope: 'messages:read', tag: 'Messages',
    summary: 'List messages',
    description: 'Newest first. Pages are stable while messages arrive: pass `pagination.next_cursor` as `cursor`. ' +
      '`q` (extension) searches subject, recipient and sender among the account\'s 10,000 newest messages.',
    query: z.object({ ...paginationQuery, ...listFilters }),
    responses: { 200: { description: 'A page of messages', schema: pageSchema(messageSchema) } },
    async handler({ query, caller }) {
      const filters = {
        status: query.status,
        to: normalizeAddressFilter(query.to),
        from: normalizeAddressFilter(query.from),
        tag: query.tag,
        createdAfter: query.created_after === undefined ? undefined : Date.parse(query.created_after),
        createdBefore: query.created_before === undefined ? undefined : Date.parse(query.created_before),
        q: query.q,
      };
      const page = await listMessages(reader, caller, filters, query.limit + 1, query.cursor);
      return { status: 200, body: toPage(page.items, query.limit, page.total, (m) => m.id, shapeMessage) };
    },
  });

  api.add({
    method: 'delete', path: '/v1/messages/{id}', scope: 'messages:send', tag: 'Messages',
    summary: 'Cancel a scheduled message',
    description: 'Only a `scheduled` message can be cancelled; it becomes `cancelled` and is never delivered. Any other status is a 409 `message_not_cancellable`.',
    params: idParam,
    responses: {
      200: { description: 'The cancelled message', schema: messageSchema },
      404: { description: 'No such message' },
      409: { description: 'The message is not scheduled (message_not_cancellable)' },
    },
    async handler({ params, caller }) {
      const outcome = await cancelMessage(db, caller, params.id, clock.now());
      if (outcome.kind === 'not_found') throw notFound('message', 'id');
      if (outcome.kind === 'refused') {
        const { status } = outcome.message;
        const why = status === 'scheduled' ? 'it is being handed to delivery' : `its status is '${status}'`;
        throw conflict('message_not_cancellable', `message cannot be cancelled: ${why}; only scheduled messages can be cancelled`);
      }
      return { status: 200, body: shapeMessage(outcome.message) };
    },
  });

  registerMessageActionRoutes(api, deps);
  registerTemplateRoutes(api, deps);
}
