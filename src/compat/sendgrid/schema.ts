/** SendGrid v3 mail/send request body, as far as Pigeon reads it (docs/compat.md lists what maps). */
import { z } from 'zod';

const address = z.strictObject({ email: z.string().min(1), name: z.string().optional() });
const stringMap = z.record(z.string(), z.string());
const setting = z.looseObject({ enable: z.boolean().optional() });

export const personalization = z.strictObject({
  to: z.array(address).min(1),
  cc: z.array(address).optional(),
  bcc: z.array(address).optional(),
  from: address.optional(),
  subject: z.string().optional(),
  headers: stringMap.optional(),
  substitutions: stringMap.optional(),
  dynamic_template_data: z.record(z.string(), z.unknown()).optional(),
  custom_args: stringMap.optional(),
  send_at: z.number().int().nonnegative().optional(),
});

export const mailSend = z.strictObject({
  personalizations: z.array(personalization).min(1).max(500), // Pigeon's batch bound (SendGrid allows 1000)
  from: address,
  reply_to: address.optional(),
  reply_to_list: z.array(address).optional(),
  subject: z.string().optional(),
  content: z.array(z.strictObject({ type: z.string().min(1), value: z.string() })).optional(),
  attachments: z.array(z.strictObject({
    content: z.string(),
    type: z.string().optional(),
    filename: z.string(),
    disposition: z.enum(['inline', 'attachment']).optional(),
    content_id: z.string().optional(),
    // The Node SDK (@sendgrid/helpers 8) sends the content id under this name.
    contentId: z.string().optional(),
  })).optional(),
  template_id: z.string().optional(),
  headers: stringMap.optional(),
  categories: z.array(z.string()).optional(),
  custom_args: stringMap.optional(),
  send_at: z.number().int().nonnegative().optional(),
  batch_id: z.string().optional(),
  asm: z.unknown().optional(),
  ip_pool_name: z.string().optional(),
  mail_settings: z.record(z.string(), setting).optional(),
  tracking_settings: z.record(z.string(), setting).optional(),
});

export type MailSend = z.output<typeof mailSend>;
export type Personalization = z.output<typeof personalization>;
