/**
 * The end of the accept path, shared by the send API and SMTP submission: a
 * prepared batch (MIME contents and one row per recipient copy) is written
 * with one `message.queued` event per message and the billable usage, in one
 * transaction (grouped with concurrent sends, see group-commit.ts). Only after
 * that commit does the caller answer; then the delivery worker is woken.
 * From here the row is the hand-off: the worker claims rows whose
 * next_attempt_at has come.
 */
import { Counter, Histogram } from 'prom-client';
import type { AppDeps } from '../deps';
import type { Tx } from '../db';
import { toJson } from '../db';
import { iso } from '../clock';
import type { Mode } from '../auth/scopes';
import { addUsage, monthOf } from '../auth/usage';
import { messageEventData, recordEvent } from '../events/record';
import { GroupCommitter } from './group-commit';

export interface NewContent {
  id: string;
  raw: Buffer;
}

export interface NewMessage {
  id: string;
  contentId: string;
  rcptType: 'to' | 'cc' | 'bcc';
  fromEmail: string;
  fromName: string | null;
  toEmail: string;
  toName: string | null;
  recipientDomain: string;
  /** Addresses shown in the Cc header of this copy. */
  cc: string[];
  subject: string | null;
  messageIdHeader: string;
}

/** One accepted send: what every copy shares, its contents and its copies. */
export interface AcceptBatch {
  accountId: string;
  mode: Mode;
  batchId: string;
  source: 'api' | 'smtp';
  now: number;
  /** null: at once */
  sendAt: number | null;
  sendingDomain: string;
  domainVerified: boolean;
  tags: string[];
  metadata: Record<string, string>;
  ipPool: string | null;
  trackOpens: boolean;
  trackClicks: boolean;
  listUnsubscribe: boolean;
  contents: NewContent[];
  messages: NewMessage[];
}

export interface AcceptedMessage {
  id: string;
  to: string;
  status: 'queued' | 'scheduled';
}

// SQLite binds at most 999 variables per statement in older builds; a message row has ~35.
const ROWS_PER_INSERT = 25;

/** One submission to the group committer: a batch and what else its transaction must hold. */
interface Entry {
  batch: AcceptBatch;
  alsoInTx?: (trx: Tx) => Promise<void>;
}

interface AcceptParts {
  committer: GroupCommitter<Entry>;
  accepted: Counter<'mode' | 'source'>;
}
const parts = new WeakMap<AppDeps, AcceptParts>();

function partsFor(deps: AppDeps): AcceptParts {
  let p = parts.get(deps);
  if (!p) {
    const registers = [deps.metrics.registry];
    const groupSize = new Histogram({
      name: 'pigeon_accept_group_messages', help: 'Messages written per accept transaction (group commit)',
      buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000], registers,
    });
    const accepted = new Counter({ name: 'pigeon_messages_accepted_total', help: 'Messages accepted into the queue', labelNames: ['mode', 'source'], registers });
    const { groupCommit, groupCommitWindowMs, groupCommitMaxMessages } = deps.config.messages;
    const committer = new GroupCommitter<Entry>(
      deps.db,
      { enabled: groupCommit, windowMs: groupCommitWindowMs, maxWeight: groupCommitMaxMessages, onCommit: (_items, weight) => groupSize.observe(weight) },
      writeEntries,
    );
    p = { committer, accepted };
    parts.set(deps, p);
  }
  return p;
}

export const statusOf = (batch: Pick<AcceptBatch, 'sendAt' | 'now'>): 'queued' | 'scheduled' =>
  batch.sendAt !== null && batch.sendAt > batch.now ? 'scheduled' : 'queued';

function messageRow(batch: AcceptBatch, m: NewMessage) {
  const status = statusOf(batch);
  return {
    id: m.id, account_id: batch.accountId, mode: batch.mode, status, batch_id: batch.batchId, content_id: m.contentId,
    from_email: m.fromEmail, from_name: m.fromName, to_email: m.toEmail, to_name: m.toName, rcpt_type: m.rcptType,
    recipient_domain: m.recipientDomain, sending_domain: batch.sendingDomain, domain_verified: batch.domainVerified,
    cc: toJson(m.cc), subject: m.subject, tags: toJson(batch.tags), metadata: toJson(batch.metadata), ip_pool: batch.ipPool,
    track_opens: batch.trackOpens, track_clicks: batch.trackClicks, list_unsubscribe: batch.listUnsubscribe,
    message_id_header: m.messageIdHeader, source: batch.source,
    send_at: batch.sendAt, next_attempt_at: status === 'scheduled' ? batch.sendAt : batch.now,
    attempts: 0, created_at: batch.now, updated_at: batch.now,
  };
}

async function insertChunked(trx: Tx, table: string, rows: object[], perInsert: number): Promise<void> {
  for (let i = 0; i < rows.length; i += perInsert) await trx(table).insert(rows.slice(i, i + perInsert));
}

/**
 * Writes several batches inside `trx`: their contents and messages with one
 * insert per table (chunked), one queued event per message, usage summed per
 * account and month, then each entry's extra writes.
 */
async function writeEntries(trx: Tx, entries: Entry[]): Promise<void> {
  const batches = entries.map((e) => e.batch);
  const contents = batches.flatMap((b) => b.contents.map((c) => ({ id: c.id, raw: c.raw, size: c.raw.length, signed: false, created_at: b.now })));
  await insertChunked(trx, 'message_contents', contents, 100);
  await insertChunked(trx, 'messages', batches.flatMap((b) => b.messages.map((m) => messageRow(b, m))), ROWS_PER_INSERT);
  const usage = new Map<string, { accountId: string; now: number; count: number }>();
  for (const batch of batches) {
    await recordQueuedEvents(trx, batch);
    if (batch.mode !== 'live') continue;
    const key = `${batch.accountId} ${monthOf(batch.now)}`;
    const u = usage.get(key) ?? { accountId: batch.accountId, now: batch.now, count: 0 };
    u.count += batch.messages.length;
    usage.set(key, u);
  }
  for (const u of usage.values()) await addUsage(trx, u.accountId, u.now, u.count);
  for (const e of entries) if (e.alsoInTx) await e.alsoInTx(trx);
}

async function recordQueuedEvents(trx: Tx, batch: AcceptBatch): Promise<void> {
  const fields = { queued_at: iso(batch.now), send_at: iso(batch.sendAt) };
  for (const m of batch.messages) {
    const facts = { id: m.id, mode: batch.mode, toEmail: m.toEmail, fromEmail: m.fromEmail, tags: batch.tags, metadata: batch.metadata };
    await recordEvent(trx, {
      accountId: batch.accountId, mode: batch.mode, type: 'message.queued', messageId: m.id,
      data: messageEventData(facts, fields), at: batch.now,
    });
  }
}

/** Writes one batch inside `trx` (contents, messages, events, usage). */
export const writeBatch = (trx: Tx, batch: AcceptBatch): Promise<void> => writeEntries(trx, [{ batch }]);

/**
 * Makes the batch durable (plus `alsoInTx`, e.g. the idempotency record) and
 * returns the per-recipient result in the batch's order.
 */
export async function acceptBatch(deps: AppDeps, batch: AcceptBatch, alsoInTx?: (trx: Tx) => Promise<void>): Promise<AcceptedMessage[]> {
  const { committer, accepted } = partsFor(deps);
  await committer.submit(batch.messages.length, { batch, alsoInTx });
  accepted.inc({ mode: batch.mode, source: batch.source }, batch.messages.length);
  deps.signals.emit('queueChanged');
  const status = statusOf(batch);
  return batch.messages.map((m) => ({ id: m.id, to: m.toEmail, status }));
}
