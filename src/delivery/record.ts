/**
 * Record step of the pipeline: the outcome of one attempt becomes the
 * message's new state, its attempt row, its events, (for hard bounces and
 * complaints) a suppression and (before the first attempt's outcome) its
 * signed content, all in one transaction, and only while we still hold the
 * row's lease. A deferral past the queue lifetime becomes a soft
 * bounce here.
 */
import type { Clock } from '../clock';
import type { Config } from '../config';
import type { Tx } from '../db';
import type { Transact } from './commit';
import { iso } from '../clock';
import { insertRows } from '../db/buffer';
import { messageEventData, recordEvent } from '../events/record';
import { addSuppression } from '../suppressions/store';
import { rollupCounter } from '../analytics/rollup';
import { refundUsage } from '../auth/usage';
import { nextAttemptAt, SANDBOX_UNIT_MS } from './retry';
import type { AttemptInfo, Bounce, Job, Outcome } from './types';

export interface RecordDeps {
  transact: Transact;
  clock: Clock;
  config: Config;
  random?: () => number;
}

/** What was written, for metrics and wake-ups; null when the row was no longer ours. */
export interface Recorded {
  result: 'delivered' | 'deferred' | 'bounced_hard' | 'bounced_soft' | 'suppressed' | 'waiting' | 'failed';
  events: number;
}

export async function recordOutcome(deps: RecordDeps, job: Job, outcome: Outcome): Promise<Recorded | null> {
  if (outcome.kind === 'dropped') return null;
  const final = expireIfOverdue(deps, job, outcome);
  return deps.transact(async (trx): Promise<Recorded | null> => {
    const now = deps.clock.now();
    // Only while the lease is ours; the signed content (prepare step) is stored in the same transaction.
    const leave: Leave = async (update) => {
      const changed = await trx('messages')
        .where({ id: job.id, lease_owner: job.leaseOwner, status: 'sending' })
        .update({ ...update, lease_owner: null, lease_expires_at: null, updated_at: now });
      if (changed && job.pendingContent) await job.pendingContent.write(trx);
      return changed > 0;
    };
    switch (final.kind) {
      case 'suppressed': {
        if (!(await leave({ status: 'suppressed', next_attempt_at: null }))) return null;
        await rollupCounter(trx, { ...job, at: now }, 'suppressed'); // not an event, but counted in analytics
        if (job.mode === 'live') await refundUsage(trx, job.accountId, job.createdAt, 1); // suppressed sends are never billed
        return { result: 'suppressed', events: 0 };
      }
      case 'failed':
        return (await leave({ status: 'failed', next_attempt_at: null, last_response: final.diagnostic })) ? { result: 'failed', events: 0 } : null;
      case 'wait': {
        const status = job.attempts > 0 ? 'deferred' : 'queued';
        return (await leave({ status, next_attempt_at: final.retryAt, last_response: final.reason })) ? { result: 'waiting', events: 0 } : null;
      }
      case 'deferred': {
        if (!(await leave({ status: 'deferred', next_attempt_at: final.next, attempts: job.attempts + 1, last_response: final.diagnostic }))) return null;
        await insertAttempt(trx, job, final.attempt, 'deferred', now);
        await rollupCounter(trx, { ...job, at: now }, 'deferred');
        return { result: 'deferred', events: 0 };
      }
      case 'bounced':
        return recordBounce(trx, job, final, now, leave);
      case 'delivered':
        return recordDelivery(trx, job, final, now, leave);
    }
  });
}

/** Takes the message out of our hands with these column changes; false when the lease is no longer ours. */
type Leave = (update: Record<string, unknown>) => Promise<boolean>;
type Final = Exclude<Outcome, { kind: 'dropped' | 'deferred' }> | { kind: 'deferred'; attempt: AttemptInfo | null; diagnostic: string; next: number };

/** A deferral with no retry left before the queue lifetime ends is a soft bounce (category expired). */
function expireIfOverdue(deps: RecordDeps, job: Job, outcome: Exclude<Outcome, { kind: 'dropped' }>): Final {
  if (outcome.kind !== 'deferred') return outcome;
  const now = deps.clock.now();
  const deadline = (job.sendAt ?? job.createdAt) + deps.config.delivery.queueLifetimeHours * 3_600_000;
  const unitMs = job.mode === 'test' ? SANDBOX_UNIT_MS : undefined;
  const next = nextAttemptAt({ now, deferrals: job.attempts + 1, deadline, unitMs, random: deps.random });
  if (next !== null) return { ...outcome, next };
  const hours = deps.config.delivery.queueLifetimeHours;
  const bounce: Bounce = {
    type: 'soft',
    category: 'expired',
    suppress: false,
    code: outcome.attempt?.code ?? null,
    enhancedCode: outcome.attempt?.enhancedCode ?? null,
    diagnostic: `gave up after ${hours} h in the queue; last reply: ${outcome.diagnostic}`,
  };
  return { kind: 'bounced', attempt: outcome.attempt, bounce, attemptOutcome: 'deferred' };
}

async function recordBounce(trx: Tx, job: Job, o: Extract<Outcome, { kind: 'bounced' }>, now: number, leave: Leave): Promise<Recorded | null> {
  const { bounce } = o;
  const attempts = job.attempts + (o.attempt ? 1 : 0);
  if (!(await leave({ status: 'bounced', bounced_at: now, next_attempt_at: null, attempts, last_response: bounce.diagnostic }))) return null;
  await insertAttempt(trx, job, o.attempt, o.attemptOutcome ?? 'bounced', now);
  await recordEvent(trx, {
    ...eventBase(job, now),
    type: 'message.bounced',
    data: messageEventData(job, {
      bounced_at: iso(now),
      type: bounce.type,
      code: bounce.code,
      enhanced_code: bounce.enhancedCode,
      diagnostic: bounce.diagnostic,
      category: bounce.category,
    }),
  });
  if (bounce.type === 'hard' && bounce.suppress) {
    await addSuppression(trx, { accountId: job.accountId, email: job.toEmail, reason: 'hard_bounce', sourceMessageId: job.id }, now);
  }
  return { result: bounce.type === 'hard' ? 'bounced_hard' : 'bounced_soft', events: 1 };
}

async function recordDelivery(trx: Tx, job: Job, o: Extract<Outcome, { kind: 'delivered' }>, now: number, leave: Leave): Promise<Recorded | null> {
  const update = { status: 'delivered', sent_at: now, delivered_at: now, next_attempt_at: null, attempts: job.attempts + 1, last_response: o.attempt.response };
  if (!(await leave(update))) return null;
  await insertAttempt(trx, job, o.attempt, 'delivered', now);
  const sent = { sent_at: iso(now), ...(o.attempt.mx ? { mx_host: o.attempt.mx } : {}), ...(o.attempt.sourceIp ? { source_ip: o.attempt.sourceIp } : {}) };
  await recordEvent(trx, { ...eventBase(job, now), type: 'message.sent', data: messageEventData(job, sent) });
  await recordEvent(trx, { ...eventBase(job, now), type: 'message.delivered', data: messageEventData(job, { delivered_at: iso(now) }) });
  if (!o.complaint) return { result: 'delivered', events: 2 };
  await recordEvent(trx, {
    ...eventBase(job, now),
    type: 'message.complained',
    data: messageEventData(job, { complained_at: iso(now), feedback_type: o.complaint.feedbackType }),
  });
  await addSuppression(trx, { accountId: job.accountId, email: job.toEmail, reason: 'complaint', sourceMessageId: job.id }, now);
  return { result: 'delivered', events: 3 };
}

const eventBase = (job: Job, now: number) => ({
  accountId: job.accountId, mode: job.mode, messageId: job.id, at: now,
  // the rollup sink counts with these instead of reading the message row again
  dims: { sendingDomain: job.sendingDomain, recipientDomain: job.recipientDomain, tags: job.tags, ipPool: job.ipPool },
});

async function insertAttempt(trx: Tx, job: Job, a: AttemptInfo | null, outcome: string, now: number): Promise<void> {
  if (!a) return;
  await insertRows(trx, 'message_attempts', [{
    message_id: job.id,
    attempted_at: a.startedAt ?? now,
    mx_host: a.mx,
    source_ip: a.sourceIp,
    tls: a.tls,
    smtp_code: a.code,
    enhanced_code: a.enhancedCode,
    response: a.response,
    outcome,
    duration_ms: a.durationMs,
    transcript: a.transcript ?? null,
  }]);
}
