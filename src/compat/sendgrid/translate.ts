/**
 * A SendGrid v3 mail/send body → one native send per personalization (each
 * with its own recipients, values and send time). Legacy `substitutions` are
 * literal replacements in subject and content, as SendGrid does them; with a
 * template_id the values come from `dynamic_template_data` (Handlebars, as in
 * SendGrid's dynamic templates).
 */
import type { AppDeps } from '../../deps';
import type { Caller } from '../../http/context';
import { ApiError, unprocessable } from '../../http/errors';
import { MAX_SEND_FACTOR } from '../../messages/render-budget';
import { templateIdByName } from '../../messages/templates';
import { compact, NativeSend, parseProvider, refused } from '../native';
import { mailSend, MailSend, Personalization } from './schema';

const MAIL_SETTINGS_IGNORED = new Set(['sandbox_mode']); // a sandbox key is Pigeon's sandbox; enable: true is refused below

function content(m: MailSend): { html?: string; text?: string } {
  const out: { html?: string; text?: string } = {};
  for (const [i, c] of (m.content ?? []).entries()) {
    const type = c.type.toLowerCase();
    if (type === 'text/html') out.html = c.value;
    else if (type === 'text/plain') out.text = c.value;
    else throw refused(`content[${i}].type`, 'only text/plain and text/html bodies');
  }
  return out;
}

function checkRefused(m: MailSend): void {
  if (m.batch_id !== undefined) throw refused('batch_id', 'SendGrid batches are not kept; cancel scheduled mail with DELETE /v1/messages/{id}');
  if (m.asm !== undefined) throw refused('asm', 'Pigeon has no unsubscribe groups; use suppressions');
  if ((m.reply_to_list?.length ?? 0) > 1) throw refused('reply_to_list', 'one Reply-To address only');
  for (const [name, s] of Object.entries(m.mail_settings ?? {})) {
    if (s.enable !== true) continue;
    throw refused(`mail_settings.${name}`, MAIL_SETTINGS_IGNORED.has(name) ? 'send with a sandbox key (svc_test_…) instead' : 'this mail setting is not available');
  }
  for (const [name, s] of Object.entries(m.tracking_settings ?? {})) {
    if (s.enable === true && name !== 'click_tracking' && name !== 'open_tracking') throw refused(`tracking_settings.${name}`, 'only click and open tracking');
  }
}

/** Literal replacement of each key, bounded so a short key with a long value cannot grow the text past `max`. */
export function substitute(text: string | undefined, values: Record<string, string>, max: number, param: string): string | undefined {
  if (text === undefined) return undefined;
  let out = text;
  for (const [key, value] of Object.entries(values)) {
    if (!key) continue;
    const parts = out.split(key);
    const grown = out.length + (parts.length - 1) * (value.length - key.length);
    if (grown > max) throw new ApiError(413, 'invalid_request_error', 'message_too_large', `substitutions make the message longer than ${max} characters`, param);
    out = parts.join(value);
  }
  return out;
}

const unixToIso = (s: number | undefined) => (s === undefined ? undefined : new Date(s * 1000).toISOString());
const tracking = (m: MailSend, name: string) => m.tracking_settings?.[name]?.enable;

function onePersonalization(m: MailSend, p: Personalization, i: number, body: { html?: string; text?: string }, max: number): NativeSend {
  const subs = p.substitutions ?? {};
  if (m.template_id !== undefined && p.substitutions) {
    throw refused(`personalizations[${i}].substitutions`, 'with a template, give template_id "d-<template id or name>" and dynamic_template_data');
  }
  const param = `personalizations[${i}].substitutions`;
  const subject = m.template_id === undefined ? (p.subject ?? m.subject) : undefined;
  if (m.template_id !== undefined && (p.subject ?? m.subject) !== undefined) throw refused('subject', 'a template_id gives the subject');
  const headers = m.headers || p.headers ? { ...m.headers, ...p.headers } : undefined;
  const metadata = m.custom_args || p.custom_args ? { ...m.custom_args, ...p.custom_args } : undefined;
  return compact({
    from: p.from ?? m.from,
    to: p.to, cc: p.cc, bcc: p.bcc,
    reply_to: m.reply_to ?? m.reply_to_list?.[0],
    subject: substitute(subject, subs, 998, param),
    html: substitute(body.html, subs, max, param),
    text: substitute(body.text, subs, max, param),
    template_id: m.template_id,
    template_data: m.template_id !== undefined || p.dynamic_template_data ? p.dynamic_template_data ?? {} : undefined,
    headers,
    attachments: m.attachments?.map((a) => compact({
      filename: a.filename, content: a.content, content_type: a.type,
      content_id: a.disposition === 'inline' ? a.content_id ?? a.contentId : undefined,
    })),
    tags: m.categories,
    metadata,
    send_at: unixToIso(p.send_at ?? m.send_at),
    ip_pool: m.ip_pool_name,
    track_clicks: tracking(m, 'click_tracking'),
    track_opens: tracking(m, 'open_tracking'),
  });
}

/**
 * SendGrid's SDKs send dynamic_template_data only for template ids starting with "d-", so "d-" is
 * stripped: "d-tpl_…" is a Pigeon template id, "d-welcome" (or "welcome") a template name.
 */
async function resolveTemplate(deps: AppDeps, caller: Caller, given: string | undefined): Promise<string | undefined> {
  if (given === undefined) return undefined;
  const bare = given.startsWith('d-') ? given.slice(2) : given;
  if (bare.startsWith('tpl_')) return bare;
  const id = await templateIdByName(deps.reader, caller.accountId, bare);
  if (!id) throw unprocessable('template_not_found', `no template named '${bare}' in this account`, 'template_id');
  return id;
}

export async function fromSendgrid(deps: AppDeps, caller: Caller, value: unknown): Promise<NativeSend[]> {
  const m = parseProvider(mailSend, value);
  checkRefused(m);
  m.template_id = await resolveTemplate(deps, caller, m.template_id);
  const maxMessageBytes = deps.config.limits.maxMessageBytes;
  const body = content(m);
  if (m.template_id === undefined && body.html === undefined && body.text === undefined) {
    throw unprocessable('missing_body', 'content is required unless template_id is given', 'content');
  }
  // Without substitutions every personalization shares the same body strings; with them each gets its own copy,
  // so their total is bounded as one request's built mail is (MAX_SEND_FACTOR × maxMessageBytes).
  const budget = maxMessageBytes * MAX_SEND_FACTOR;
  let total = 0;
  return m.personalizations.map((p, i) => {
    const native = onePersonalization(m, p, i, body, maxMessageBytes);
    if (p.substitutions && Object.keys(p.substitutions).length) total += String(native.html ?? '').length + String(native.text ?? '').length;
    if (total > budget) throw new ApiError(413, 'invalid_request_error', 'message_too_large', `the substituted bodies of this request total more than ${budget} characters`, `personalizations[${i}]`);
    return native;
  });
}
