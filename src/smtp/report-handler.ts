/**
 * What the inbound listener does with a received report: parse it
 * (reports.ts), find the message it is about, decide the outcome and record
 * it (inbound-outcomes.ts). The message is named by the VERP address the
 * report was sent to, else by a VERP Return-Path in the returned headers (the
 * token's HMAC proves we sent it); a complaint may also be matched by the
 * returned Message-ID together with the complained-about recipient. A DSN's
 * status is classified with the MTA's bounce rules, so a sysadmin's rules file
 * applies to late bounces too. Whatever cannot be matched is dropped with a
 * log line; only a failure to write is an error (the sender then retries).
 */
import type { AppDeps } from '../deps';
import { parseVerp } from '../delivery';
import { createClassifier, parseReply } from '../delivery/classify';
import { messageById, messagesByHeader, recordAsyncBounce, recordComplaint, type AsyncBounce, type ReportedMessage } from './inbound-outcomes';
import { parseReport, type DsnRecipient, type OriginalRef, type Report } from './reports';

export type Classify = ReturnType<typeof createClassifier>;

export interface ReportOutcome {
  kind: Report['kind'];
  /** one line per message considered: "msg_…: recorded hard bounce", "dropped: …" */
  results: string[];
}

/** The outcome of one per-recipient DSN block, or null when it reports no failure (delivered, relayed…). */
export function classifyDsn(classify: Classify, r: DsnRecipient): AsyncBounce | null {
  if (r.action !== 'failed' && r.action !== 'delayed') return null;
  const status = r.status ?? (r.action === 'failed' ? '5.0.0' : '4.0.0');
  const diagnostic = r.diagnostic ?? `Action: ${r.action}; Status: ${status}`;
  const { code } = parseReply(r.diagnostic);
  if (r.action === 'failed' && status.startsWith('5')) {
    const c = classify({ code: code ?? 550, enhancedCode: status, response: diagnostic });
    return { type: c.type, category: c.category, suppress: c.suppress, code, enhancedCode: status, diagnostic, final: true };
  }
  const category = /^4\.4\.7$/.test(status) ? 'expired' : 'other';
  return { type: 'soft', category, suppress: false, code, enhancedCode: status, diagnostic, final: r.action === 'failed' };
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

async function byHeader(deps: AppDeps, original: OriginalRef, recipient: string | null): Promise<ReportedMessage | string> {
  if (!original.messageId) return 'no VERP address and no Message-ID to match';
  const found = await messagesByHeader(deps, original.messageId, recipient);
  if (found.length === 1) return found[0];
  return found.length ? `Message-ID <${original.messageId}> matches ${found.length} messages; no recipient to pick one` : `no message with Message-ID <${original.messageId}>`;
}

async function applyBounce(deps: AppDeps, message: ReportedMessage, bounce: AsyncBounce): Promise<string> {
  const result = await recordAsyncBounce(deps, message, bounce);
  const what = `${bounce.final ? '' : 'delayed '}${bounce.type} bounce ${bounce.enhancedCode}`;
  return `${message.id}: ${result === 'recorded' ? 'recorded' : `ignored (${result})`} ${what}`;
}

/** DSNs are matched by VERP only: the token is what proves the bounce is about a message we sent. */
async function handleDsn(deps: AppDeps, classify: Classify, report: Extract<Report, { kind: 'dsn' }>, ids: string[]): Promise<string[]> {
  if (!ids.length) return ['dropped: delivery status notification names no message of ours (no valid VERP address)'];
  const results: string[] = [];
  for (const id of ids) {
    const message = await messageById(deps, id);
    const block = message && blockFor(report.recipients, message.toEmail);
    const bounce = block && classifyDsn(classify, block);
    if (!message) results.push(`dropped: ${id} does not exist`);
    else if (!bounce) results.push(`dropped: ${id}: no failure reported for ${message.toEmail}`);
    else results.push(await applyBounce(deps, message, bounce));
  }
  return results;
}

async function handleArf(deps: AppDeps, report: Extract<Report, { kind: 'arf' }>, ids: string[]): Promise<string[]> {
  if (report.feedbackType === 'not-spam') return ['dropped: feedback type not-spam is not a complaint'];
  const messages: Array<ReportedMessage | string> = ids.length
    ? await Promise.all(ids.map(async (id) => (await messageById(deps, id)) ?? `${id} does not exist`))
    : [await byHeader(deps, report.original, report.originalRcptTo)];
  const results: string[] = [];
  for (const m of messages) {
    if (typeof m === 'string') {
      results.push(`dropped: ${m}`);
      continue;
    }
    const result = await recordComplaint(deps, m, report.feedbackType);
    results.push(`${m.id}: ${result === 'recorded' ? 'recorded' : `ignored (${result})`} complaint (${report.feedbackType})`);
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
