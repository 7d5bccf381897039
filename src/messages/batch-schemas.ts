/**
 * Schemas of POST /v1/messages/batch. Items are checked one by one by the
 * batch service (an invalid item fails alone), so the request schema accepts
 * any object per item; its OpenAPI description is still the send body's,
 * attached as JSON Schema metadata.
 */
import { z } from 'zod';
import type { Config } from '../config';
import { MAX_BATCH_ITEMS } from './batch';
import { acceptedItem, sendBodySchema } from './schemas';

/** Room for a few full-size messages (base64 makes 4 bytes of 3); bigger batches are split by the client. */
export const batchBodyLimit = (config: Config) => Math.round(config.limits.maxMessageBytes * 1.4) * 2 + 64 * 1024;

export function batchBodySchema(config: Config) {
  const sendJson = z.toJSONSchema(sendBodySchema(config), { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' }) as Record<string, unknown>;
  delete sendJson.$schema;
  const item = z.record(z.string(), z.unknown()).meta(sendJson);
  return z.strictObject({
    messages: z.array(item).min(1).max(MAX_BATCH_ITEMS).describe(`1 to ${MAX_BATCH_ITEMS} send bodies, each as for POST /v1/messages/send.`),
  });
}

const itemError = z.object({
  status: z.number().int().describe('The HTTP status a single send would have answered (422, 413 …).'),
  type: z.string(),
  code: z.string().describe('As in the error shape, e.g. validation_failed, domain_not_verified.'),
  message: z.string(),
  param: z.string().optional().describe('The offending field within the item, e.g. to[0].'),
});

export const batchResponse = z.object({
  data: z.array(z.union([
    z.object({
      status: z.literal('accepted'),
      batch_id: z.string().describe('Shared by the messages of this item.'),
      messages: z.array(acceptedItem).describe('One entry per recipient, in item order (to, cc, bcc).'),
    }),
    z.object({ status: z.literal('failed'), error: itemError }),
  ])).describe('One result per item, in request order.'),
});
