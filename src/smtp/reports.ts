/**
 * Reading the reports the inbound listener receives: delivery status
 * notifications (RFC 3464, `multipart/report; report-type=delivery-status`,
 * also the UTF-8 `global-delivery-status` of RFC 6533) and abuse feedback
 * reports (ARF, RFC 5965, `report-type=feedback-report`). mime-tree.ts splits
 * the MIME; the machine-readable parts are header-like field groups parsed
 * here. Anything else (auto-replies, garbage) is reported as `other` with a
 * reason, for the log line of a dropped message. Never throws on bad input.
 *
 * Only the first PARSE_PREFIX_BYTES are read. A report carries what it says
 * in its headers and first parts (the human-readable text, the
 * machine-readable fields, then the returned original, whose headers come
 * first); the rest is the original's body, which nothing here needs. The
 * prefix keeps parsing on the main thread short whatever the report holds:
 * 1 MiB of crafted DSN fields or quoted-printable took ~200 ms, the 128 KiB
 * prefix of the same takes ~13 ms.
 */
import { fieldValue, splitMessage } from './headers';
import { findNode, readMimeTree, type MimeNode } from './mime-tree';

export interface DsnRecipient {
  /** the addresses of Original-Recipient and Final-Recipient, lower-case (forwarding can make them differ) */
  addresses: string[];
  /** failed | delayed | delivered | relayed | expanded */
  action: string;
  /** the Status field, e.g. 5.1.1 */
  status: string | null;
  /** Diagnostic-Code without its type, e.g. "550 5.1.1 <a@b>: user unknown" */
  diagnostic: string | null;
  remoteMta: string | null;
}

/** What identifies the original message: its headers, as returned inside the report. */
export interface OriginalRef {
  messageId: string | null;
  returnPath: string | null;
}

export type Report =
  | { kind: 'dsn'; recipients: DsnRecipient[]; reportingMta: string | null; original: OriginalRef }
  | { kind: 'arf'; feedbackType: string; original: OriginalRef }
  | { kind: 'other'; reason: string };

/** 128 KiB: room for a long notification text, the status fields and the original's headers. */
export const PARSE_PREFIX_BYTES = 128 * 1024;

type Fields = Map<string, string>;

/** Blank-line separated groups of "Name: value" fields (folding allowed). */
export function fieldGroups(text: string): Fields[] {
  const groups: Fields[] = [];
  for (const block of text.replace(/\r\n/g, '\n').split(/\n[ \t]*\n/)) {
    const fields: Fields = new Map();
    for (const line of block.replace(/\n[ \t]+/g, ' ').split('\n')) {
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      const name = line.slice(0, colon).trim().toLowerCase();
      if (!fields.has(name)) fields.set(name, line.slice(colon + 1).trim());
    }
    if (fields.size) groups.push(fields);
  }
  return groups;
}

/** "rfc822; Alice@Dest.test" → "alice@dest.test"; "smtp; 550 …" → "550 …" */
const afterType = (value: string | undefined): string | null => {
  if (!value) return null;
  const semi = value.indexOf(';');
  return (semi >= 0 ? value.slice(semi + 1) : value).trim() || null;
};
const bareAddress = (value: string | undefined): string | null => afterType(value)?.replace(/^<|>$/g, '').toLowerCase() ?? null;

function parseDeliveryStatus(text: string): { reportingMta: string | null; recipients: DsnRecipient[] } {
  const [perMessage, ...perRecipient] = fieldGroups(text);
  const recipients = perRecipient
    .filter((f) => f.has('action'))
    .map((f) => ({
      addresses: [f.get('original-recipient'), f.get('final-recipient')].map(bareAddress).filter((a): a is string => Boolean(a)),
      action: (f.get('action') ?? '').toLowerCase().split(/\s/)[0],
      status: /^\d\.\d{1,3}\.\d{1,3}/.exec(f.get('status') ?? '')?.[0] ?? null,
      diagnostic: afterType(f.get('diagnostic-code')),
      remoteMta: afterType(f.get('remote-mta')),
    }));
  return { reportingMta: afterType(perMessage?.get('reporting-mta')), recipients };
}

const ORIGINAL_TYPES = ['message/rfc822', 'text/rfc822-headers', 'message/global', 'message/global-headers'];

/** Message-ID and Return-Path of the returned original (full message or headers only). */
function originalRef(report: MimeNode): OriginalRef {
  const part = findNode(report, (n) => ORIGINAL_TYPES.includes(n.type));
  if (!part) return { messageId: null, returnPath: null };
  const { fields } = splitMessage(part.body);
  const value = (name: string) => {
    const f = fields.find((x) => x.name === name);
    return f ? fieldValue(f) : null;
  };
  return {
    messageId: value('message-id')?.replace(/^<|>$/g, '') || null,
    returnPath: value('return-path')?.replace(/^<|>$/g, '') || null,
  };
}

export function parseReport(raw: Buffer): Report {
  const root = readMimeTree(raw.subarray(0, PARSE_PREFIX_BYTES));
  // a report forwarded inside another message is still a report
  const report = findNode(root, (n) => n.type === 'multipart/report');
  if (!report) return { kind: 'other', reason: `not a report (${root.type})` };
  const reportType = (report.params['report-type'] ?? '').toLowerCase();
  const part = (...types: string[]) => findNode(report, (n) => types.includes(n.type));
  if (reportType === 'delivery-status' || reportType === 'global-delivery-status') {
    const status = part('message/delivery-status', 'message/global-delivery-status');
    if (!status) return { kind: 'other', reason: 'delivery-status report without a message/delivery-status part' };
    const parsed = parseDeliveryStatus(status.body.toString('utf8'));
    if (!parsed.recipients.length) return { kind: 'other', reason: 'delivery-status report without per-recipient fields' };
    return { kind: 'dsn', ...parsed, original: originalRef(report) };
  }
  if (reportType === 'feedback-report') {
    const feedback = part('message/feedback-report');
    const fields = feedback ? fieldGroups(feedback.body.toString('utf8'))[0] : undefined;
    const feedbackType = fields?.get('feedback-type')?.toLowerCase();
    if (!feedbackType) return { kind: 'other', reason: 'feedback report without a Feedback-Type' };
    return { kind: 'arf', feedbackType, original: originalRef(report) };
  }
  return { kind: 'other', reason: `unsupported report type '${reportType}'` };
}
