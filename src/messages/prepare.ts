/**
 * First stage of the send API: a validated request body becomes an
 * AcceptBatch — rendered, MIME-built copies ready to store — or a 4xx naming
 * the field at fault. Nothing is written here; accept.ts stores the batch.
 * The steps run cheapest first: structure, account rules (a few indexed
 * reads), then rendering and MIME building.
 */
import type { AppDeps } from '../deps';
import type { Mode } from '../auth/scopes';
import { ApiError, unprocessable } from '../http/errors';
import { newId } from '../ids';
import { isVerifiedDomain } from '../domains/lookup';
import { poolExists } from '../pools/lookup';
import type { AcceptBatch, NewContent, NewMessage } from './accept';
import { type Address, checkHeaderValue } from './addresses';
import { listUnsubscribeFor } from './bulk';
import type { Attachment } from './mime';
import { mimePoolOf } from './mime-pool';
import { parseParticipants, Participants, Recipient } from './participants';
import { compilePoolOf } from './compile-pool';
import { compileAll, Renderer, Renderers } from './render';
import { MAX_SEND_FACTOR, RenderBudget } from './render-budget';
import type { SendBody } from './schemas';
import { getTemplate, storedRenderers } from './templates';

export interface Sender {
  accountId: string;
  mode: Mode;
}

const RESERVED_HEADERS = new Set([
  'from', 'to', 'cc', 'bcc', 'reply-to', 'sender', 'subject', 'date', 'message-id', 'mime-version',
  'dkim-signature', 'return-path', 'received',
]);
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;
const MAX_HEADERS = 50;

export function checkHeaders(headers: Record<string, string>, listUnsubscribe: boolean): Array<[string, string]> {
  const list = Object.entries(headers);
  if (list.length > MAX_HEADERS) throw unprocessable('too_many_headers', `at most ${MAX_HEADERS} extra headers`, 'headers');
  for (const [name, value] of list) {
    const param = `headers.${name}`;
    if (!HEADER_NAME.test(name)) throw unprocessable('invalid_header_name', `'${name}' is not a valid header name`, param);
    const lower = name.toLowerCase();
    // X-Pigeon-* are control headers of the SMTP path: never passed on to recipients.
    if (RESERVED_HEADERS.has(lower) || lower.startsWith('content-') || lower.startsWith('x-pigeon-')) {
      throw unprocessable('reserved_header', `the ${name} header is set by Pigeon and cannot be given in headers`, param);
    }
    if (listUnsubscribe && lower.startsWith('list-unsubscribe')) {
      throw unprocessable('reserved_header', `${name} is added by list_unsubscribe; give one or the other`, param);
    }
    checkHeaderValue(value, param);
  }
  return list;
}

/** Strict base64 without backtracking regexes (contents run to megabytes). */
function isBase64(s: string): boolean {
  if (s.length % 4 !== 0 || /[^A-Za-z0-9+/=]/.test(s)) return false;
  const pad = s.indexOf('=');
  return pad < 0 || (pad >= s.length - 2 && /^=+$/.test(s.slice(pad)));
}

export function decodeAttachments(list: NonNullable<SendBody['attachments']>): Attachment[] {
  return list.map((a, i) => {
    checkHeaderValue(a.filename, `attachments[${i}].filename`);
    const compact = a.content.replace(/[\r\n]/g, '');
    if (!isBase64(compact)) throw unprocessable('invalid_base64', 'content is not valid base64', `attachments[${i}].content`);
    return { filename: a.filename, content: Buffer.from(compact, 'base64'), contentType: a.content_type, contentId: a.content_id };
  });
}

/** send_at as ms; null when absent. A past time means at once; beyond the horizon is a 422. */
export function resolveSendAt(sendAt: string | undefined, now: number, horizonHours: number): number | null {
  if (sendAt === undefined) return null;
  const at = Date.parse(sendAt);
  if (at > now + horizonHours * 3600_000) {
    throw unprocessable('send_at_too_far', `send_at may be at most ${horizonHours} hours ahead`, 'send_at');
  }
  return at;
}

/** The send's renderers, compiled once per send (a stored template once per version, from its cache). */
async function contentRenderers(deps: AppDeps, accountId: string, body: SendBody): Promise<Renderers> {
  const via = { pool: compilePoolOf(deps), account: accountId };
  if (body.template_id !== undefined) {
    const inline = (['subject', 'html', 'text'] as const).find((f) => body[f] !== undefined);
    if (inline) throw unprocessable('template_conflict', `${inline} cannot be combined with template_id`, inline);
    const template = await getTemplate(deps.db, accountId, body.template_id);
    if (!template) throw unprocessable('template_not_found', `no template ${body.template_id} in this account`, 'template_id');
    return storedRenderers(template, deps.config.limits, via);
  }
  if (body.subject === undefined) throw unprocessable('missing_subject', 'subject is required (or template_id)', 'subject');
  checkHeaderValue(body.subject, 'subject');
  if (!body.html && !body.text) throw unprocessable('missing_body', 'one of html or text is required', 'html');
  return compileAll({ subject: body.subject, html: body.html, text: body.text }, deps.config.limits, via);
}

/** Account rules: a verified From domain for live sends, a known IP pool. */
async function checkAccountRules(deps: AppDeps, sender: Sender, fromDomain: string, ipPool: string | undefined): Promise<boolean> {
  const verified = await isVerifiedDomain(deps.db, sender.accountId, fromDomain);
  if (sender.mode === 'live' && !verified) {
    throw unprocessable('domain_not_verified', `${fromDomain} is not a verified sending domain of this account`, 'from');
  }
  if (ipPool !== undefined && !(await poolExists(deps.db, sender.accountId, ipPool))) {
    throw unprocessable('unknown_ip_pool', `no IP pool named '${ipPool}'`, 'ip_pool');
  }
  return verified;
}

export async function prepareSend(deps: AppDeps, sender: Sender, body: SendBody): Promise<AcceptBatch> {
  const { limits } = deps.config;
  const now = deps.clock.now();
  const people = parseParticipants(body, limits.maxRecipients);
  const listUnsubscribe = listUnsubscribeFor(deps.config, body.list_unsubscribe, body.tags ?? [], body.headers ?? {});
  const headers = checkHeaders(body.headers ?? {}, listUnsubscribe);
  const attachments = decodeAttachments(body.attachments ?? []);
  const sendAt = resolveSendAt(body.send_at, now, limits.sendAtHorizonHours);
  const renderers = await contentRenderers(deps, sender.accountId, body);
  const domainVerified = await checkAccountRules(deps, sender, people.from.domain, body.ip_pool);
  const copies = await buildCopies(deps, { people, renderers, headers, attachments, data: body.template_data ?? {}, now });
  return {
    accountId: sender.accountId, mode: sender.mode, batchId: newId('bat'), source: 'api', now, sendAt,
    sendingDomain: people.from.domain, domainVerified,
    tags: body.tags ?? [], metadata: body.metadata ?? {}, ipPool: body.ip_pool ?? null,
    trackOpens: body.track_opens ?? deps.config.tracking.trackOpensDefault, trackClicks: body.track_clicks ?? deps.config.tracking.trackClicksDefault, listUnsubscribe,
    ...copies,
  };
}

interface CopyInput {
  people: Participants;
  renderers: Renderers;
  headers: Array<[string, string]>;
  attachments: Attachment[];
  data: Record<string, unknown>;
  now: number;
}

/** Without substitutions all copies share one MIME; with them each `to` recipient gets its own. */
async function buildCopies(deps: AppDeps, input: CopyInput): Promise<{ contents: NewContent[]; messages: NewMessage[] }> {
  const { people } = input;
  const all = [...people.to, ...people.cc, ...people.bcc];
  const ids = all.map(() => newId('msg'));
  const groups: Array<{ shownTo: Recipient[]; copies: number[]; data: Record<string, unknown>; dataParam: string }> = people.perRecipient
    ? people.to.map((r, i) => ({ shownTo: [r], copies: [i], data: { ...input.data, ...r.substitutions }, dataParam: r.substitutions ? `${r.param}.substitutions` : 'template_data' }))
    : [{ shownTo: people.to, copies: all.map((_, i) => i), data: input.data, dataParam: 'template_data' }];
  const contents: NewContent[] = [];
  const messages: NewMessage[] = [];
  // Every copy is rendered before any MIME is built: a send over the render budget fails before the costly part.
  const rendered = renderGroups(input.renderers, groups, deps.config.limits.maxMessageBytes);
  let total = 0;
  for (const [g, group] of groups.entries()) {
    const first = ids[group.copies[0]];
    const messageIdHeader = `${first}@${deps.config.hostname}`;
    const { subject, html, text } = rendered[g];
    const raw = await mimePoolOf(deps).compose({
      from: people.from, to: group.shownTo.map(addressOf), cc: people.cc.map(addressOf), replyTo: people.replyTo, subject, html, text,
      headers: input.headers, attachments: input.attachments, messageId: messageIdHeader, date: input.now,
    });
    total += raw.length;
    checkSize(raw.length, total, deps.config.limits.maxMessageBytes);
    const contentId = newId('cnt');
    contents.push({ id: contentId, raw });
    for (const i of group.copies) {
      const r = all[i];
      messages.push({
        id: ids[i], contentId, rcptType: r.type, fromEmail: people.from.email, fromName: people.from.name,
        toEmail: r.email, toName: r.name, recipientDomain: r.domain, cc: people.cc.map((c) => c.email), subject, messageIdHeader,
      });
    }
  }
  return { contents, messages };
}

/** Only what the MIME shows of a recipient: the builder's thread gets a copy, which need not hold substitutions. */
const addressOf = ({ email, name, domain }: Recipient): Address => ({ email, name, domain });

/** Subject, html and text of each group, all against one budget (see render-budget.ts). */
function renderGroups(renderers: Renderers, groups: Array<{ data: Record<string, unknown>; dataParam: string }>, maxMessageBytes: number) {
  const budget = new RenderBudget(maxMessageBytes);
  const render = (r: Renderer | undefined, data: Record<string, unknown>) => (r ? r(data, budget) : undefined);
  return groups.map((group) => {
    const subject = render(renderers.subject, group.data) ?? '';
    checkHeaderValue(subject, group.dataParam); // values from template data must not break the header either
    return { subject, html: render(renderers.html, group.data), text: render(renderers.text, group.data) };
  });
}

function checkSize(size: number, total: number, max: number): void {
  if (size > max) throw new ApiError(413, 'invalid_request_error', 'message_too_large', `the message is ${size} bytes after MIME encoding; the limit is ${max}`);
  if (total > max * MAX_SEND_FACTOR) {
    throw new ApiError(413, 'invalid_request_error', 'message_too_large', `the copies of this send total more than ${max * MAX_SEND_FACTOR} bytes; send fewer recipients per request`);
  }
}
