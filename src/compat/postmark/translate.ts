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

/** Address lists are parsed before the native recipient limit applies, so their length is bounded first. */
const ADDRESS_LIST_CHARS = 64 * 1024;
const addresses = z.string().max(ADDRESS_LIST_CHARS);

/** Optional fields may be null: Python's postmarker sends unset arguments as null. */
const common = {
  From: z.string().min(1).max(1000),
  To: addresses.min(1),
  Cc: addresses.nullish(),
  Bcc: addresses.nullish(),
  ReplyTo: addresses.nullish(),
  Headers: z.array(z.strictObject({ Name: z.string(), Value: z.string() })).nullish(),
  Tag: z.string().nullish(),
  Metadata: z.record(z.string(), z.string()).nullish(),
  Attachments: z.array(z.strictObject({
    Name: z.string(),
    Content: z.string(),
    ContentType: z.string().nullish(),
    ContentID: z.string().nullish(),
    // Postmark's SDK types carry ContentLength on received mail; accepted and ignored on send.
    ContentLength: z.number().nullish(),
  })).nullish(),
  TrackOpens: z.boolean().nullish(),
  TrackLinks: z.enum(['None', 'HtmlAndText', 'HtmlOnly', 'TextOnly']).nullish(),
  MessageStream: z.string().nullish(),
};

export const postmarkEmail = z.strictObject({
  ...common,
  Subject: z.string().nullish(),
  HtmlBody: z.string().nullish(),
  TextBody: z.string().nullish(),
});

export const postmarkTemplated = z.strictObject({
  ...common,
  TemplateId: z.union([z.number(), z.string()]).nullish(),
  TemplateAlias: z.string().nullish(),
  TemplateModel: z.record(z.string(), z.unknown()).nullish(),
  // The template gives the subject; postmarker sends Subject: null with template sends.
  Subject: z.null().optional(),
  // Pigeon keeps <style> blocks as written; inlining is a rendering nicety, not content.
  InlineCss: z.boolean().nullish(),
});

export type PostmarkEmail = z.output<typeof postmarkEmail>;
export type PostmarkTemplated = z.output<typeof postmarkTemplated>;

function trackClicks(value: PostmarkEmail['TrackLinks'] | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  if (value === 'TextOnly') throw refused('TrackLinks', 'Pigeon rewrites links in the HTML part only; use HtmlOnly, HtmlAndText or None');
  return value !== 'None';
}

function replyTo(value: string | null | undefined) {
  if (value == null || value.trim() === '') return undefined;
  const list = addressList(value, 'ReplyTo');
  if (list.length > 1) throw refused('ReplyTo', 'one Reply-To address only');
  return list[0];
}

function attachments(list: PostmarkEmail['Attachments']) {
  return list?.map((a) => compact({
    filename: a.Name,
    content: a.Content,
    content_type: a.ContentType ?? undefined,
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
  const list = (v: string | null | undefined, field: string) => (v && v.trim() ? addressList(v, field) : undefined);
  return compact({
    from: addressList(m.From, 'From')[0],
    to: addressList(m.To, 'To'),
    cc: list(m.Cc, 'Cc'),
    bcc: list(m.Bcc, 'Bcc'),
    reply_to: replyTo(m.ReplyTo),
    headers: headers(m.Headers),
    tags: m.Tag ? [m.Tag] : undefined,
    metadata: m.Metadata ?? undefined,
    attachments: attachments(m.Attachments ?? undefined),
    track_opens: m.TrackOpens ?? undefined,
    track_clicks: trackClicks(m.TrackLinks ?? undefined),
    ip_pool: m.MessageStream && m.MessageStream !== DEFAULT_STREAM ? m.MessageStream : undefined,
  });
}

export function fromEmail(value: unknown, prefix: PropertyKey[] = []): NativeSend {
  const m = parseProvider(postmarkEmail, value, prefix);
  return { ...commonFields(m), ...compact({ subject: m.Subject ?? undefined, html: m.HtmlBody ?? undefined, text: m.TextBody ?? undefined }) };
}

/** A template send: TemplateId is a Pigeon template id (tpl_…), TemplateAlias a template name. */
export async function fromTemplated(deps: AppDeps, caller: Caller, value: unknown, prefix: PropertyKey[] = []): Promise<NativeSend> {
  const m = parseProvider(postmarkTemplated, value, prefix);
  if ((m.TemplateId == null) === (m.TemplateAlias == null)) {
    throw unprocessable('template_required', 'give exactly one of TemplateId and TemplateAlias', 'TemplateId');
  }
  let templateId = m.TemplateId == null ? undefined : String(m.TemplateId);
  if (m.TemplateAlias != null) {
    templateId = await templateIdByName(deps.reader, caller.accountId, m.TemplateAlias);
    if (!templateId) throw unprocessable('template_not_found', `no template named '${m.TemplateAlias}' in this account`, 'TemplateAlias');
  }
  return { ...commonFields(m), template_id: templateId, template_data: m.TemplateModel ?? {} };
}
