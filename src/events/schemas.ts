/**
 * The webhook event envelope and the `data` of each event type (SPEC.md parts
 * 2 and 6). These schemas document the `webhooks` section of the OpenAPI
 * document; the recorder builds `data` in exactly these shapes.
 */
import { z } from 'zod';

/** The event types of SPEC.md part 6; `*` in a webhook's events means these. */
export const SPEC_EVENT_TYPES = [
  'message.queued',
  'message.sent',
  'message.delivered',
  'message.bounced',
  'message.complained',
  'message.opened',
  'message.clicked',
] as const;

/** Pigeon extensions: a webhook receives them only when it names them (not through `*`). */
export const EXTENSION_EVENT_TYPES = ['message.deferred', 'ip.listed', 'ip.delisted'] as const;

export const EVENT_TYPES = [...SPEC_EVENT_TYPES, ...EXTENSION_EVENT_TYPES] as const;

export const isExtensionEvent = (type: string): boolean => (EXTENSION_EVENT_TYPES as readonly string[]).includes(type);

export type EventType = (typeof EVENT_TYPES)[number];

const common = {
  message_id: z.string().describe('The `msg_` identifier.'),
  to: z.string().describe('Recipient address.'),
  from: z.string().describe('Sender address.'),
  tags: z.array(z.string()).optional().describe('Tags of the message, when it has any.'),
  metadata: z.record(z.string(), z.string()).optional().describe('Metadata of the message, when it has any.'),
  sandbox: z.boolean().optional().describe('True for messages sent with a test key (never delivered).'),
};

export const eventDataSchemas: Record<EventType, z.ZodObject> = {
  'message.queued': z.object({ ...common, queued_at: z.string(), send_at: z.string().nullable().optional() }),
  'message.sent': z.object({ ...common, sent_at: z.string(), mx_host: z.string().optional(), source_ip: z.string().optional() }),
  'message.delivered': z.object({ ...common, delivered_at: z.string().describe('ISO 8601 UTC date-time.') }),
  'message.bounced': z.object({
    ...common,
    bounced_at: z.string(),
    type: z.enum(['hard', 'soft']),
    code: z.number().int().nullable().describe('SMTP reply code, e.g. 550.'),
    enhanced_code: z.string().nullable().describe('RFC 3463 enhanced status code, e.g. 5.1.1.'),
    diagnostic: z.string().describe('The remote reply or DSN diagnostic.'),
    category: z.string().describe('invalid_recipient, mailbox_full, spam_block, policy, dns, expired, other'),
  }),
  'message.deferred': z.object({
    ...common,
    deferred_at: z.string(),
    attempt: z.number().int().describe('How many delivery attempts have been made, this one included.'),
    next_attempt_at: z.string().describe('When the next attempt is due (ISO 8601 UTC).'),
    code: z.number().int().nullable().describe('SMTP reply code, e.g. 451; null when no server answered (DNS or connection failure).'),
    enhanced_code: z.string().nullable().describe('RFC 3463 enhanced status code, e.g. 4.7.1.'),
    response: z.string().describe('The remote reply, or why no reply was had.'),
    mx_host: z.string().optional().describe('The MX host that answered.'),
  }).describe('Extension: a delivery attempt was deferred (4xx or a temporary failure) and will be retried.'),
  'ip.listed': z.object({
    address: z.string().describe('The sending address found on a blocklist.'),
    zone: z.string().describe('The DNSBL zone, e.g. zen.spamhaus.org.'),
    listed_at: z.string(),
    codes: z.array(z.string()).describe('The A records the zone answered (its listing codes, e.g. 127.0.0.2).'),
    reason: z.string().nullable().describe('The zone\'s TXT explanation, when it gives one.'),
    pools: z.array(z.string()).describe('This account\'s IP pools that hold the address.'),
  }).describe('Extension: a sending address of one of your pools was found on a DNSBL.'),
  'ip.delisted': z.object({
    address: z.string(),
    zone: z.string(),
    delisted_at: z.string(),
    pools: z.array(z.string()).describe('This account\'s IP pools that hold the address.'),
  }).describe('Extension: a sending address of one of your pools is no longer on a DNSBL where it was listed.'),
  'message.complained': z.object({ ...common, complained_at: z.string(), feedback_type: z.string().describe('ARF Feedback-Type, e.g. abuse.') }),
  'message.opened': z.object({
    ...common,
    opened_at: z.string(),
    user_agent: z.string().nullable(),
    unique: z.boolean().describe('True on the first open of this message.'),
    prefetched: z.boolean().describe('True when a known privacy proxy fetched the pixel, not a person.'),
  }),
  'message.clicked': z.object({
    ...common,
    clicked_at: z.string(),
    url: z.string(),
    user_agent: z.string().nullable(),
    unique: z.boolean().describe('True on the first click of this link.'),
  }),
};

export function envelopeSchema(type: EventType) {
  return z.object({
    id: z.string().describe('Event identifier, prefix `evt_`.'),
    event: z.literal(type),
    timestamp: z.string().describe('ISO 8601 UTC date-time.'),
    data: eventDataSchemas[type],
    test: z.literal(true).optional().describe('Present only on events sent by POST /v1/webhooks/{id}/test.'),
  });
}
