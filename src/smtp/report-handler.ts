/**
 * What the inbound listener does with a received report: parse it
 * (reports.ts), find the message it is about, decide the outcome and record
 * it (inbound-outcomes.ts).
 *
 * A report acts only on a message it names unforgeably: by the VERP address
 * it was sent to, else by a VERP Return-Path in the returned headers. Every
 * copy of a send has its own VERP address whose tag is an HMAC under the
 * server's secret (delivery/verp.ts), and only that copy's recipient ever sees
 * it. A Message-ID is no proof: copies of one send (to, cc, bcc) share it, and
 * a relaying client may reuse it anywhere; so is not Original-Rcpt-To, which a
 * complainer writes. A report is therefore applied to the named copy only,
 * with that copy's recipient, account and mode, and never to a sandbox copy
 * (it never left the machine). A DSN's status is classified with the MTA's
 * bounce rules, so a sysadmin's rules file applies to late bounces too.
 * Whatever cannot be tied to a copy is dropped with the reason; only a
 * failure to write is an error (the sender then retries).
 */
import type { AppDeps } from '../deps';
import { parseVerp } from '../delivery';
import { createClassifier, parseReply } from '../delivery/classify';
import { messageById, recordAsyncBounce, recordComplaint, recordDelayNotice, type AsyncBounce, type ReportedMessage } from './inbound-outcomes';
import { parseReport, type DsnRecipient, type OriginalRef, type Report } from './reports';

export type Classify = ReturnType<typeof createClassifier>;

export interface ReportOutcome {
  kind: Report['kind'];
  /** one line per message considered: "msg_…: recorded hard bounce", "dropped: …" */
  results: string[];
}

/** What one per-recipient DSN block reports: a final failure, a delay, or nothing to act on (delivered, relayed…). */
export type DsnOutcome = { kind: 'bounce'; bounce: AsyncBounce } | { kind: 'delay'; diagnostic: string } | null;

export function classifyDsn(classify: Classify, r: DsnRecipient): DsnOutcome {
  if (r.action !== 'failed' && r.action !== 'delayed') return null;
  const status = r.status ?? (r.action === 'failed' ? '5.0.0' : '4.0.0');
  const diagnostic = r.diagnostic ?? `Action: ${r.action}; Status: ${status}`;
  if (r.action === 'delayed') return { kind: 'delay', diagnostic: `${status} ${diagnostic}` };
  const { code } = parseReply(r.diagnostic);
  if (status.startsWith('5')) {
    const c = classify({ code: code ?? 550, enhancedCode: status, response: diagnostic });
    return { kind: 'bounce', bounce: { type: c.type, category: c.category, suppress: c.suppress, code, enhancedCode: status, diagnostic } };
  }
  const category = /^4\.4\.7$/.test(status) ? 'expired' : 'other';
  return { kind: 'bounce', bounce: { type: 'soft', category, suppress: false, code, enhancedCode: status, diagnostic } };
}

/** The messages named by VERP: the envelope recipients first, else the returned Return-Path. */
function verpIds(deps: AppDeps, rcptTo: string[], original: OriginalRef): string[] {
  const ids = rcptTo.map((a) => parseVerp(deps.config, a)).filter((id): id is string => id !== null);
  if (ids.length || !original.returnPath) return ids;
  const fromReturnPath = parseVerp(deps.config, original.returnPath);
  return fromReturnPath ? [fromReturnPath] : [];
}

/** The block about this message's recipient; a single block is taken as is. */
function blockFor(blocks: DsnRecipient[], to: string): DsnRecipient | undefined {
  const lower = to.toLowerCase();
  return blocks.find((b) => b.addresses.includes(lower)) ?? (blocks.length === 1 ? blocks[0] : undefined);
}

const outcomeText = (result: string): string => (result === 'recorded' ? 'recorded' : `ignored (${result})`);

async function applyDsn(deps: AppDeps, message: ReportedMessage, outcome: NonNullable<DsnOutcome>): Promise<string> {
  if (outcome.kind === 'delay') return `${message.id}: ${outcomeText(await recordDelayNotice(deps, message, outcome.diagnostic))} delay notice (not a bounce)`;
  const { bounce } = outcome;
  return `${message.id}: ${outcomeText(await recordAsyncBounce(deps, message, bounce))} ${bounce.type} bounce ${bounce.enhancedCode}`;
}

/** The copy a VERP token names, or why it cannot be acted on. */
async function namedCopy(deps: AppDeps, id: string): Promise<ReportedMessage | string> {
  const message = await messageById(deps, id);
  if (!message) return `${id} does not exist`;
  if (message.mode !== 'live') return `${id} is a sandbox message, which never left the machine`;
  return message;
}

/** A report that names no copy by VERP, e.g. one matchable only by a Message-ID anyone can quote. */
function unnamed(what: string, original: OriginalRef): string[] {
  const hint = original.messageId ? ` (Message-ID <${original.messageId.slice(0, 200)}> alone does not identify a copy)` : '';
  return [`dropped: ${what} names no message of ours by a valid VERP address${hint}`];
}

async function handleDsn(deps: AppDeps, classify: Classify, report: Extract<Report, { kind: 'dsn' }>, ids: string[]): Promise<string[]> {
  if (!ids.length) return unnamed('delivery status notification', report.original);
  const results: string[] = [];
  for (const id of ids) {
    const message = await namedCopy(deps, id);
    const block = typeof message === 'string' ? undefined : blockFor(report.recipients, message.toEmail);
    const outcome = block && classifyDsn(classify, block);
    if (typeof message === 'string') results.push(`dropped: ${message}`);
    else if (!outcome) results.push(`dropped: ${id}: no failure or delay reported for ${message.toEmail}`);
    else results.push(await applyDsn(deps, message, outcome));
  }
  return results;
}

async function handleArf(deps: AppDeps, report: Extract<Report, { kind: 'arf' }>, ids: string[]): Promise<string[]> {
  if (report.feedbackType === 'not-spam') return ['dropped: feedback type not-spam is not a complaint'];
  if (!ids.length) return unnamed('feedback report', report.original);
  const results: string[] = [];
  for (const id of ids) {
    const message = await namedCopy(deps, id);
    if (typeof message === 'string') results.push(`dropped: ${message}`);
    else results.push(`${id}: ${outcomeText(await recordComplaint(deps, message, report.feedbackType))} complaint (${report.feedbackType})`);
  }
  return results;
}

/** Parses and records a report; throws only when the database fails. */
export async function handleReport(deps: AppDeps, classify: Classify, raw: Buffer, rcptTo: string[]): Promise<ReportOutcome> {
  const report = parseReport(raw);
  if (report.kind === 'other') return { kind: 'other', results: [`dropped: ${report.reason}`] };
  const ids = verpIds(deps, rcptTo, report.original);
  const results = report.kind === 'dsn' ? await handleDsn(deps, classify, report, ids) : await handleArf(deps, report, ids);
  return { kind: report.kind, results };
}
