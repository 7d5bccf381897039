/**
 * Resend request bodies → native send bodies (mapping table: docs/compat.md).
 * Resend's tags are name/value pairs: they become Pigeon metadata, which
 * events and webhooks carry the same way.
 */
import { z } from 'zod';
import { compact, NativeSend, parseProvider, refused } from '../native';

const oneOrMany = z.union([z.string(), z.array(z.string())]);
const many = (v: string | string[] | undefined) => (v === undefined ? undefined : Array.isArray(v) ? v : [v]);

export const resendEmail = z.strictObject({
  from: z.string().min(1),
  to: oneOrMany,
  subject: z.string().optional(),
  cc: oneOrMany.optional(),
  bcc: oneOrMany.optional(),
  reply_to: oneOrMany.optional(),
  html: z.string().optional(),
  text: z.string().optional(),
  headers: z.record(z.string(), z.string()).optional(),
  attachments: z.array(z.strictObject({
    content: z.string().optional(),
    filename: z.string().optional(),
    path: z.string().optional(),
    content_type: z.string().optional(),
    content_id: z.string().optional(),
  })).optional(),
  tags: z.array(z.strictObject({ name: z.string().min(1), value: z.string() })).optional(),
  scheduled_at: z.string().optional(),
  template: z.strictObject({ id: z.string().min(1), variables: z.record(z.string(), z.unknown()).optional() }).optional(),
  topic_id: z.string().optional(),
});

export type ResendEmail = z.output<typeof resendEmail>;

function attachments(list: ResendEmail['attachments']) {
  return list?.map((a, i) => {
    // Fetching a URL on the sender's behalf would let a tenant make Pigeon request any address.
    if (a.path !== undefined) throw refused(`attachments[${i}].path`, 'Pigeon does not fetch attachments by URL; send their content (base64)');
    return compact({ filename: a.filename, content: a.content, content_type: a.content_type, content_id: a.content_id });
  });
}

function tagsAsMetadata(tags: ResendEmail['tags']) {
  if (!tags) return undefined;
  return Object.fromEntries(tags.map((t) => [t.name, t.value]));
}

function replyTo(value: ResendEmail['reply_to']) {
  const list = many(value);
  if (list && list.length > 1) throw refused('reply_to', 'one Reply-To address only');
  return list?.[0];
}

export function fromResend(value: unknown, prefix: PropertyKey[] = []): NativeSend {
  const m = parseProvider(resendEmail, value, prefix);
  if (m.topic_id !== undefined) throw refused('topic_id', 'Pigeon has no audiences or topics');
  return compact({
    from: m.from, to: many(m.to), cc: many(m.cc), bcc: many(m.bcc), reply_to: replyTo(m.reply_to),
    subject: m.subject, html: m.html, text: m.text, headers: m.headers,
    attachments: attachments(m.attachments), metadata: tagsAsMetadata(m.tags), send_at: m.scheduled_at,
    template_id: m.template?.id, template_data: m.template ? m.template.variables ?? {} : undefined,
  });
}
