/**
 * Request and response schemas of the messages API. They validate requests
 * (unknown fields are rejected) and are the OpenAPI description, so every
 * field carries a description. Checks zod cannot express (address syntax,
 * reserved headers, base64, template compilation, account rules) follow in
 * prepare.ts with the same error shape.
 */
import { z } from 'zod';
import type { Config } from '../config';
import { MAX_DATA_DEPTH, tooDeepKey } from './data-depth';
import { MAX_WORK_PER_SEND, RENDER_DEADLINE_MS } from './render-budget';

export const STATUSES = ['scheduled', 'queued', 'sending', 'sent', 'delivered', 'deferred', 'bounced', 'cancelled', 'suppressed', 'failed'] as const;
export type MessageStatus = (typeof STATUSES)[number];

const ADDRESS_ERROR = 'expected an address: "user@example.com", "Name <user@example.com>" or {"email", "name"}';
const email = z.string().min(1).max(320).describe('The email address; IDN domains are accepted.');
const displayName = z.string().max(256).describe('Display name.');
const addressString = z.string().min(1).max(600).describe('"user@example.com" or "Name <user@example.com>".');

/** Template values nested past MAX_DATA_DEPTH (see data-depth.ts) are refused, named down to their key. */
const templateValues = z.record(z.string().max(200), z.unknown()).superRefine((values, ctx) => {
  const key = tooDeepKey(values);
  if (key !== undefined) ctx.addIssue({ code: 'custom', path: [key], message: `nested more than ${MAX_DATA_DEPTH} arrays or objects deep` });
});

export const addressInput = z.union([addressString, z.strictObject({ email, name: displayName.optional() })], { error: ADDRESS_ERROR });

const toInput = z.union(
  [
    addressString,
    z.strictObject({
      email,
      name: displayName.optional(),
      substitutions: templateValues.optional()
        .describe(`Template values for this recipient only, overriding template_data; each nested at most ${MAX_DATA_DEPTH} arrays or objects deep (422). With substitutions every \`to\` recipient gets its own copy whose To header names only them; cc/bcc are then not allowed.`),
    }),
  ],
  { error: ADDRESS_ERROR },
);

export const TAG = /^[^\u0000-\u001f\u007f"\\]+$/;

export function sendBodySchema(config: Config) {
  const max = config.limits.maxRecipients;
  // Arrays only: a single-or-array union would hide which entry is at fault.
  const list = <T extends z.ZodType>(item: T, what: string) => z.array(item).min(1).max(max).describe(what);
  const { templateSourceBytes, templateNestingDepth, maxMessageBytes } = config.limits;
  const templateBounds = `At most ${templateSourceBytes} bytes and ${templateNestingDepth} levels of nested blocks (422); `
    + `rendering past ${maxMessageBytes} characters stops with a 413, and past ${MAX_WORK_PER_SEND} steps of work `
    + `(look-ups, helper calls, loop turns) or ${RENDER_DEADLINE_MS} ms per send with a 422.`;
  return z.strictObject({
    from: addressInput.describe('Sender. Live sends need a verified domain of the account.'),
    to: list(toInput, `Recipients (1 to ${max}); each gets its own message id.`),
    cc: list(addressInput, 'Copy recipients, shown in the Cc header.').optional(),
    bcc: list(addressInput, 'Blind copy recipients, never shown in any header.').optional(),
    reply_to: addressInput.optional().describe('Reply-To address.'),
    subject: z.string().max(998).optional().describe('Subject (a Handlebars template). Required unless template_id is given.'),
    html: z.string().optional().describe(`HTML body (a Handlebars template; values are HTML-escaped). Line breaks are sent as CRLF. ${templateBounds}`),
    text: z.string().optional().describe(`Plain-text body (a Handlebars template; values are not escaped). At least one of html and text is required. Line breaks are sent as CRLF. ${templateBounds}`),
    template_id: z.string().min(1).max(64).optional().describe('A stored template (tpl_…) giving subject, html and text; excludes those three fields.'),
    template_data: templateValues.optional()
      .describe(`Values for the templates of subject, html and text; each nested at most ${MAX_DATA_DEPTH} arrays or objects deep (422).`),
    headers: z.record(z.string().min(1).max(100), z.string().max(2000)).optional()
      .describe('Extra headers. Reserved: From, To, Cc, Bcc, Reply-To, Sender, Subject, Date, Message-ID, MIME-Version, Content-*, DKIM-Signature, Return-Path, Received.'),
    attachments: z.array(z.strictObject({
      filename: z.string().min(1).max(255).describe('File name shown to the recipient.'),
      content: z.string().describe('File content, base64.'),
      content_type: z.string().max(255).regex(/^[\w.+-]+\/[\w.+-]+$/, 'expected a MIME type like application/pdf').optional()
        .describe('MIME type; guessed from the file name when absent.'),
      content_id: z.string().min(1).max(255).regex(/^[^<>\s]+$/, 'content_id may not contain <, > or spaces').optional()
        .describe('Makes the part inline, referenced from html as cid:<content_id>.'),
    })).max(50).optional().describe('Attachments (at most 50).'),
    tags: z.array(z.string().min(1).max(64).regex(TAG, 'tags may not contain control characters, " or \\')).max(10).optional()
      .describe('Up to 10 labels, echoed in events and usable as a list filter.'),
    metadata: z.record(z.string().min(1).max(64), z.string().max(1000))
      .refine((m) => Object.keys(m).length <= 20, 'at most 20 metadata keys').optional()
      .describe('Up to 20 string key/values, echoed in events.'),
    ip_pool: z.string().min(1).max(64).optional().describe('Name of the IP pool to send from (default: `default`).'),
    send_at: z.iso.datetime({ offset: true, error: 'expected an ISO 8601 date-time with a time zone, e.g. 2026-01-05T09:00:00Z' }).optional()
      .describe(`Deliver at this time (at most ${config.limits.sendAtHorizonHours} h ahead); a past time or none sends at once. The message is \`scheduled\` until then and can be cancelled.`),
    track_opens: z.boolean().optional().describe('Add an open-tracking pixel at delivery (default: config tracking.trackOpensDefault).'),
    track_clicks: z.boolean().optional().describe('Rewrite links for click tracking at delivery (default: config tracking.trackClicksDefault).'),
    list_unsubscribe: z.boolean().optional().describe('Add List-Unsubscribe headers (one-click, RFC 8058) at delivery. Default: on for messages tagged with one of the operator\'s bulk tags (messages.bulkTags: bulk, marketing, newsletter) that bring no List-Unsubscribe header of their own, off otherwise.'),
  });
}


export type SendBody = z.output<ReturnType<typeof sendBodySchema>>;
export type ToInput = z.output<typeof toInput>;

export const acceptedItem = z.object({
  id: z.string().describe('The `msg_` id of this recipient\'s message.'),
  to: z.string().describe('The recipient address.'),
  status: z.enum(['queued', 'scheduled']),
});
export const sendResponse = z.object({ data: z.array(acceptedItem).describe('One entry per recipient, in request order (to, cc, bcc).') });

const attempt = z.object({
  attempted_at: z.string(),
  mx_host: z.string().nullable(),
  source_ip: z.string().nullable(),
  tls: z.boolean().nullable().describe('The session used STARTTLS.'),
  tls_version: z.string().nullable().describe('Extension: the TLS version (e.g. TLSv1.3); null when the session stayed plain.'),
  tls_verified: z.boolean().nullable().describe('Extension: the MX certificate is valid for the MX host name; null without TLS.'),
  tls_policy: z.enum(['enforce', 'testing', 'none']).nullable()
    .describe('Extension: the MTA-STS mode of the recipient domain applied to this attempt; null when it publishes no policy.'),
  tls_failure: z.string().nullable()
    .describe('Extension: the RFC 8460 result type when TLS fell short (certificate-host-mismatch, certificate-not-trusted, certificate-expired, starttls-not-supported, validation-failure).'),
  smtp_code: z.number().int().nullable(),
  enhanced_code: z.string().nullable(),
  response: z.string().nullable().describe('The SMTP reply.'),
  outcome: z.string().describe('delivered, deferred, bounced or failed'),
  duration_ms: z.number().int().nullable(),
  transcript: z.string().nullable()
    .describe('The SMTP conversation of this attempt, one line each: "C: " sent, "S: " received, "*** " local notes; the message body is elided; at most 16 KiB (extension).'),
});

const event = z.object({ id: z.string(), type: z.string(), created_at: z.string(), data: z.record(z.string(), z.unknown()) });

export const messageSchema = z.object({
  id: z.string(),
  status: z.enum(STATUSES),
  mode: z.enum(['test', 'live']),
  sandbox: z.boolean().describe('True for test-mode messages: never delivered, never billed.'),
  batch_id: z.string().describe('Shared by the messages of one send request.'),
  from: z.object({ email: z.string(), name: z.string().nullable() }),
  to: z.object({ email: z.string(), name: z.string().nullable(), type: z.enum(['to', 'cc', 'bcc']) }).describe('This copy\'s recipient.'),
  cc: z.array(z.string()).describe('Addresses in the Cc header.'),
  subject: z.string().nullable(),
  tags: z.array(z.string()),
  metadata: z.record(z.string(), z.string()),
  ip_pool: z.string().nullable(),
  track_opens: z.boolean(),
  track_clicks: z.boolean(),
  list_unsubscribe: z.boolean(),
  domain_verified: z.boolean().describe('Whether the From domain was a verified domain of the account at send time.'),
  source: z.string().nullable().describe('api or smtp'),
  message_id_header: z.string().describe('The Message-ID header, without <>.'),
  attempt_count: z.number().int(),
  last_response: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  send_at: z.string().nullable(),
  sent_at: z.string().nullable(),
  delivered_at: z.string().nullable(),
  bounced_at: z.string().nullable(),
});

export const messageDetailSchema = messageSchema.extend({
  attempts: z.array(attempt).describe('Delivery attempts, oldest first.'),
  events: z.array(event).describe('Events of this message, oldest first.'),
});

const isoDate = z.iso.datetime({ offset: true, error: 'expected an ISO 8601 date-time with a time zone' });
export const listFilters = {
  status: z.enum(STATUSES).optional().describe('Only messages in this status.'),
  to: z.string().max(320).optional().describe('Only messages to this recipient address.'),
  from: z.string().max(320).optional().describe('Only messages from this sender address.'),
  tag: z.string().max(64).regex(TAG, 'not a valid tag').optional().describe('Only messages carrying this tag.'),
  created_after: isoDate.optional().describe('Only messages created at or after this time.'),
  created_before: isoDate.optional().describe('Only messages created before this time.'),
  q: z.string().trim().min(1).max(200).optional()
    .describe('Search: subject, recipient or sender contains this text (case-insensitive), among the account\'s 10,000 newest messages (extension).'),
};
