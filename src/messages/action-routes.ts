/**
 * What the console's message screen needs beyond SPEC.md's routes: the stored
 * content as a reader sees it, and "retry now" for a deferred message.
 */
import { z } from 'zod';
import type { AppDeps } from '../deps';
import type { ApiRouter } from '../http/api';
import { conflict, notFound } from '../http/errors';
import { CONTENT_MAX_CHARS, contentOf, HEADERS_MAX } from './content-view';
import { getMessage, retryNow } from './repository';
import { messageSchema } from './schemas';
import { shapeMessage } from './shape';

const idParam = z.object({ id: z.string().min(1).max(64).describe('The `msg_` id.') });

const contentSchema = z.object({
  subject: z.string().nullable(),
  html: z.string().nullable().describe('The HTML part as sent (tracking rewrites included); show it only in a sandboxed frame.'),
  text: z.string().nullable(),
  headers: z.array(z.object({ name: z.string(), value: z.string() })).describe('Header fields in order, unfolded.'),
  attachments: z.array(z.object({ filename: z.string().nullable(), content_type: z.string(), size: z.number().int() })),
  truncated: z.boolean().describe(`true when a body was cut at ${CONTENT_MAX_CHARS} characters or the header list at ${HEADERS_MAX} fields.`),
});

export function registerMessageActionRoutes(api: ApiRouter, deps: AppDeps): void {
  const { db, reader, clock, signals } = deps;

  api.add({
    method: 'get', path: '/v1/messages/{id}/content', scope: 'messages:read', tag: 'Messages', extension: true,
    summary: 'Message content',
    description: `Subject, HTML, text and header fields of the stored message (the bytes that are sent, DKIM signature included once signed). Each body is cut at ${CONTENT_MAX_CHARS} characters.`,
    params: idParam,
    responses: { 200: { description: 'The content', schema: contentSchema }, 404: { description: 'No such message' } },
    async handler({ params, caller }) {
      if (!(await getMessage(reader, caller, params.id))) throw notFound('message', 'id');
      const content = await contentOf(reader, params.id);
      if (!content) throw notFound('message', 'id');
      return { status: 200, body: content };
    },
  });

  api.add({
    method: 'post', path: '/v1/messages/{id}/retry', scope: 'messages:send', tag: 'Messages', extension: true,
    summary: 'Retry a deferred message now',
    description: 'A `deferred` message becomes due at once instead of at its next scheduled attempt. Any other status is a 409 `message_not_retryable`.',
    params: idParam,
    responses: {
      200: { description: 'The message, due now', schema: messageSchema },
      404: { description: 'No such message' },
      409: { description: 'The message is not deferred (message_not_retryable)' },
    },
    async handler({ params, caller }) {
      const outcome = await retryNow(db, caller, params.id, clock.now());
      if (outcome.kind === 'not_found') throw notFound('message', 'id');
      if (outcome.kind === 'refused') {
        throw conflict('message_not_retryable', `message cannot be retried now: its status is '${outcome.message.status}'; only deferred messages can`);
      }
      signals.emit('queueChanged');
      return { status: 200, body: shapeMessage(outcome.message) };
    },
  });
}
