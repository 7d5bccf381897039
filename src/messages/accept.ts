/**
 * The end of the accept path, shared by the send API and SMTP submission: a
 * prepared batch (MIME contents and one row per recipient copy) is written
 * with one `message.queued` event per message and the billable usage, in one
 * transaction (the writer's, shared with concurrent work: src/db/writer.ts). Only after
 * that commit does the caller answer; then the delivery worker is woken.
 * From here the row is the hand-off: the worker claims rows whose
 * next_attempt_at has come, except copies due at once that it agreed to take
 * in memory (delivery/handoff.ts), which are written already leased to it.
 */
import { Counter } from 'prom-client';
import type { AppDeps } from '../deps';
import type { Tx } from '../db';
import { toJson } from '../db';
import { iso } from '../clock';
import type { Mode } from '../auth/scopes';
import { addUsage } from '../auth/usage';
import { messageEventData, recordEvent } from '../events/record';
import { insertRows } from '../db/buffer';
import type { Grant, Lease } from '../delivery/handoff';

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

interface AcceptParts {
  accepted: Counter<'mode' | 'source'>;
}
const parts = new WeakMap<AppDeps, AcceptParts>();

function partsFor(deps: AppDeps): AcceptParts {
  let p = parts.get(deps);
  if (!p) {
    const registers = [deps.metrics.registry];
    const accepted = new Counter({ name: 'pigeon_messages_accepted_total', help: 'Messages accepted into the queue', labelNames: ['mode', 'source'], registers });
    p = { accepted };
    parts.set(deps, p);
  }
  return p;
}

export const statusOf = (batch: Pick<AcceptBatch, 'sendAt' | 'now'>): 'queued' | 'scheduled' =>
  batch.sendAt !== null && batch.sendAt > batch.now ? 'scheduled' : 'queued';

function messageRow(batch: AcceptBatch, m: NewMessage, lease?: Lease) {
  const status = statusOf(batch);
  return {
    id: m.id, account_id: batch.accountId, mode: batch.mode, batch_id: batch.batchId, content_id: m.contentId,
    // a copy the MTA takes in memory is written already leased to it (delivery/handoff.ts)
    ...(lease ? { status: 'sending', lease_owner: lease.owner, lease_expires_at: lease.expiresAt } : { status }),
    from_email: m.fromEmail, from_name: m.fromName, to_email: m.toEmail, to_name: m.toName, rcpt_type: m.rcptType,
    recipient_domain: m.recipientDomain, sending_domain: batch.sendingDomain, domain_verified: batch.domainVerified,
    cc: toJson(m.cc), subject: m.subject, tags: toJson(batch.tags), metadata: toJson(batch.metadata), ip_pool: batch.ipPool,
    track_opens: batch.trackOpens, track_clicks: batch.trackClicks, list_unsubscribe: batch.listUnsubscribe,
    message_id_header: m.messageIdHeader, source: batch.source,
    send_at: batch.sendAt, next_attempt_at: status === 'scheduled' ? batch.sendAt : batch.now,
    attempts: 0, created_at: batch.now, updated_at: batch.now,
  };
}

/** The batch's message rows; up to `grant.count` copies the MTA takes are leased to it. */
export function messageRows(batch: AcceptBatch, grant: Grant | null = null): Array<Record<string, unknown>> {
  let left = grant?.count ?? 0;
  return batch.messages.map((m) => {
    const taken = grant !== null && left > 0 && grant.takes(m.recipientDomain);
    if (taken) left--;
    return messageRow(batch, m, taken ? grant : undefined);
  });
}

/**
 * Writes one batch inside `trx`: its contents, messages and queued events (kept by the writer and inserted
 * with the other batches of its transaction, many rows per statement) and its billable usage.
 */
export async function writeBatch(trx: Tx, batch: AcceptBatch, rows = messageRows(batch)): Promise<void> {
  await insertRows(trx, 'message_contents', batch.contents.map((c) => ({ id: c.id, raw: c.raw, size: c.raw.length, signed: false, created_at: batch.now })));
  await insertRows(trx, 'messages', rows);
  await recordQueuedEvents(trx, batch);
  if (batch.mode === 'live') await addUsage(trx, batch.accountId, batch.now, batch.messages.length);
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

/**
 * Makes the batch durable (plus `alsoInTx`, e.g. the idempotency record) and
 * returns the per-recipient result in the batch's order.
 */
export async function acceptBatch(deps: AppDeps, batch: AcceptBatch, alsoInTx?: (trx: Tx) => Promise<void>): Promise<AcceptedMessage[]> {
  return (await acceptBatches(deps, [batch], alsoInTx))[0];
}

/**
 * Several prepared sends (a batch request, or one send) made durable in one transaction, with `alsoInTx`;
 * each send's results in its order. Copies due at once go to the MTA in memory as far as it has free slots
 * (delivery/handoff.ts): written leased to it, handed over after the commit; the rest wake it to claim.
 */
export async function acceptBatches(deps: AppDeps, batches: AcceptBatch[], alsoInTx?: (trx: Tx) => Promise<void>): Promise<AcceptedMessage[][]> {
  const { accepted } = partsFor(deps);
  const grants = await Promise.all(batches.map((b) => (statusOf(b) === 'queued' ? deps.handoff.reserve(b.messages.length, b.now, b) : null)));
  const rows = batches.map((b, i) => messageRows(b, grants[i]));
  const weight = batches.reduce((n, b) => n + b.messages.length, 0);
  try {
    await deps.writer.run(async (trx) => {
      for (const [i, batch] of batches.entries()) await writeBatch(trx, batch, rows[i]);
      if (alsoInTx) await alsoInTx(trx);
    }, weight);
  } catch (err) {
    for (const grant of grants) grant?.cancel();
    throw err;
  }
  let queued = 0;
  for (const [i, batch] of batches.entries()) {
    accepted.inc({ mode: batch.mode, source: batch.source }, batch.messages.length);
    const leased = rows[i].filter((r) => r.status === 'sending');
    grants[i]?.hand(leased, new Map(batch.contents.map((c) => [c.id, c.raw])));
    queued += batch.messages.length - leased.length;
  }
  if (queued > 0) deps.signals.emit('queueChanged');
  return batches.map((batch) => batch.messages.map((m) => ({ id: m.id, to: m.toEmail, status: statusOf(batch) })));
}
