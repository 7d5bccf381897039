/**
 * Postmark request bodies → native send bodies. What is mapped, ignored and
 * refused is the table in docs/compat.md; a field that would change the mail
 * and cannot be honoured is refused (422), never dropped.
 */
import { z } from 'zod';
import type { AppDeps } from '../../deps';
import type { Caller } from '../../http/context';
import { unprocessable } from '../../http/errors';
import { templateIdByName } from '../../messages/templates';
import { addressList, compact, NativeSend, parseProvider, refused } from '../native';

/** Postmark's default transactional stream: Pigeon's default IP pool. */
const DEFAULT_STREAM = 'outbound';

const common = {
  From: z.string().min(1),
  To: z.string().min(1),
  Cc: z.string().optional(),
  Bcc: z.string().optional(),
  ReplyTo: z.string().optional(),
  Headers: z.array(z.strictObject({ Name: z.string(), Value: z.string() })).optional(),
  Tag: z.string().optional(),
  Metadata: z.record(z.string(), z.string()).optional(),
  Attachments: z.array(z.strictObject({
    Name: z.string(),
    Content: z.string(),
    ContentType: z.string().optional(),
    ContentID: z.string().nullish(),
    // Postmark's SDK types carry ContentLength on received mail; accepted and ignored on send.
    ContentLength: z.number().optional(),
  })).optional(),
  TrackOpens: z.boolean().optional(),
  TrackLinks: z.enum(['None', 'HtmlAndText', 'HtmlOnly', 'TextOnly']).optional(),
  MessageStream: z.string().optional(),
};

export const postmarkEmail = z.strictObject({
  ...common,
  Subject: z.string().optional(),
  HtmlBody: z.string().optional(),
  TextBody: z.string().optional(),
});

export const postmarkTemplated = z.strictObject({
  ...common,
  TemplateId: z.union([z.number(), z.string()]).optional(),
  TemplateAlias: z.string().optional(),
  TemplateModel: z.record(z.string(), z.unknown()).optional(),
  // Pigeon keeps <style> blocks as written; inlining is a rendering nicety, not content.
  InlineCss: z.boolean().optional(),
});

export type PostmarkEmail = z.output<typeof postmarkEmail>;
export type PostmarkTemplated = z.output<typeof postmarkTemplated>;

function trackClicks(value: PostmarkEmail['TrackLinks']): boolean | undefined {
  if (value === undefined) return undefined;
  if (value === 'TextOnly') throw refused('TrackLinks', 'Pigeon rewrites links in the HTML part only; use HtmlOnly, HtmlAndText or None');
  return value !== 'None';
}

function replyTo(value: string | undefined) {
  if (value === undefined || value.trim() === '') return undefined;
  const list = addressList(value, 'ReplyTo');
  if (list.length > 1) throw refused('ReplyTo', 'one Reply-To address only');
  return list[0];
}

function attachments(list: PostmarkEmail['Attachments']) {
  return list?.map((a) => compact({
    filename: a.Name,
    content: a.Content,
    content_type: a.ContentType,
    // Postmark writes "cid:logo.png"; the html references it the same way in both.
    content_id: a.ContentID ? a.ContentID.replace(/^cid:/i, '') : undefined,
  }));
}

function headers(list: PostmarkEmail['Headers']) {
  if (!list) return undefined;
  const out: Record<string, string> = {};
  for (const [i, h] of list.entries()) {
    if (Object.hasOwn(out, h.Name)) throw unprocessable('duplicate_header', `the ${h.Name} header is given twice`, `Headers[${i}]`);
    out[h.Name] = h.Value;
  }
  return out;
}

/** Fields every Postmark send shares, native-named. */
function commonFields(m: PostmarkEmail | PostmarkTemplated): NativeSend {
  const list = (v: string | undefined, field: string) => (v && v.trim() ? addressList(v, field) : undefined);
  return compact({
    from: addressList(m.From, 'From')[0],
    to: addressList(m.To, 'To'),
    cc: list(m.Cc, 'Cc'),
    bcc: list(m.Bcc, 'Bcc'),
    reply_to: replyTo(m.ReplyTo),
    headers: headers(m.Headers),
    tags: m.Tag ? [m.Tag] : undefined,
    metadata: m.Metadata,
    attachments: attachments(m.Attachments),
    track_opens: m.TrackOpens,
    track_clicks: trackClicks(m.TrackLinks),
    ip_pool: m.MessageStream && m.MessageStream !== DEFAULT_STREAM ? m.MessageStream : undefined,
  });
}

export function fromEmail(value: unknown, prefix: PropertyKey[] = []): NativeSend {
  const m = parseProvider(postmarkEmail, value, prefix);
  return { ...commonFields(m), ...compact({ subject: m.Subject, html: m.HtmlBody, text: m.TextBody }) };
}

/** A template send: TemplateId is a Pigeon template id (tpl_…), TemplateAlias a template name. */
export async function fromTemplated(deps: AppDeps, caller: Caller, value: unknown, prefix: PropertyKey[] = []): Promise<NativeSend> {
  const m = parseProvider(postmarkTemplated, value, prefix);
  if ((m.TemplateId === undefined) === (m.TemplateAlias === undefined)) {
    throw unprocessable('template_required', 'give exactly one of TemplateId and TemplateAlias', 'TemplateId');
  }
  let templateId = m.TemplateId === undefined ? undefined : String(m.TemplateId);
  if (m.TemplateAlias !== undefined) {
    templateId = await templateIdByName(deps.reader, caller.accountId, m.TemplateAlias);
    if (!templateId) throw unprocessable('template_not_found', `no template named '${m.TemplateAlias}' in this account`, 'TemplateAlias');
  }
  return { ...commonFields(m), template_id: templateId, template_data: m.TemplateModel ?? {} };
}
