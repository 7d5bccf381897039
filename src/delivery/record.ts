/**
 * Record step of the pipeline: the outcome of one attempt becomes the
 * message's new state, its attempt row, its events, (for hard bounces and
 * complaints) a suppression and (for a first deferral) its signed content,
 * all in one transaction, and only while we still hold the row's lease.
 * Outcomes are a batch kind of the writer: all those of one transaction are
 * one UPDATE (leave.ts). A deferral past the queue lifetime becomes a soft
 * bounce here.
 */
import type { Clock } from '../clock';
import type { Config } from '../config';
import type { Tx } from '../db';
import type { Submit } from './commit';
import type { BatchKind } from '../db/writer';
import { leaveAll, type LeaveUpdate } from './leave';
import { iso } from '../clock';
import { insertRows } from '../db/buffer';
import { messageEventData, recordEvent } from '../events/record';
import { addSuppression } from '../suppressions/store';
import { rollupCounter } from '../analytics/rollup';
import { refundUsage } from '../auth/usage';
import { nextAttemptAt, SANDBOX_UNIT_MS } from './retry';
import { countTlsSession } from '../tls-policy/counts';
import type { AttemptInfo, Bounce, Job, Outcome } from './types';

export interface RecordDeps {
  submit: Submit;
  clock: Clock;
  config: Config;
  random?: () => number;
}

/** What was written, for metrics and wake-ups; null when the row was no longer ours. */
export interface Recorded {
  result: 'delivered' | 'deferred' | 'bounced_hard' | 'bounced_soft' | 'suppressed' | 'waiting' | 'failed';
  events: number;
}

interface OutcomeItem {
  job: Job;
  final: Final;
  now: number;
}

export async function recordOutcome(deps: RecordDeps, job: Job, outcome: Outcome): Promise<Recorded | null> {
  if (outcome.kind === 'dropped') return null;
  const final = expireIfOverdue(deps, job, outcome);
  return deps.submit(outcomes, { job, final, now: deps.clock.now() });
}

/**
 * An idle writer holding only outcomes waits this long for more before it commits: deliveries finish a few
 * at a time, no client waits on their record, and more outcomes per commit mean fewer commits (fsyncs) for
 * the same mail. The slots stay taken those milliseconds longer.
 */
const OUTCOME_GATHER_MS = 5;

/** Every outcome of one writer transaction: one lease-guarded UPDATE (leave.ts), then what each one adds. */
export const outcomes: BatchKind<OutcomeItem, Recorded | null> = {
  name: 'delivery outcomes',
  gatherMs: OUTCOME_GATHER_MS,
  async run(trx, items) {
    const plans = items.map(plan);
    const ours = await leaveAll(trx, plans.map((p, i) => ({ id: items[i].job.id, leaseOwner: items[i].job.leaseOwner, update: p.update, at: items[i].now })));
    const answers: Array<Recorded | null> = [];
    for (const [i, p] of plans.entries()) {
      const { job, now } = items[i];
      if (!ours.has(job.id)) {
        answers.push(null);
        continue;
      }
      // Signed bytes are kept only for the retry a deferral promises: every retry sends exactly them.
      if (p.update.status === 'deferred' && job.pendingContent) await job.pendingContent.write(trx);
      answers.push(await p.then(trx, now));
    }
    return answers;
  },
};

interface Plan {
  update: LeaveUpdate;
  /** what the outcome adds once the row is known to have been ours */
  then(trx: Tx, now: number): Promise<Recorded>;
}

function plan({ job, final, now }: OutcomeItem): Plan {
  const dkim = job.pendingContent?.note;
  const leave = (update: LeaveUpdate): LeaveUpdate => ({ ...update, dkim });
  switch (final.kind) {
    case 'suppressed':
      return {
        update: leave({ status: 'suppressed', next_attempt_at: null, attempts: job.attempts }),
        async then(trx, at) {
          await rollupCounter(trx, { ...job, at }, 'suppressed'); // not an event, but counted in analytics
          if (job.mode === 'live') await refundUsage(trx, job.accountId, job.createdAt, 1); // suppressed sends are never billed
          return { result: 'suppressed', events: 0 };
        },
      };
    case 'failed':
      return { update: leave({ status: 'failed', next_attempt_at: null, attempts: job.attempts, last_response: final.diagnostic }), then: async () => ({ result: 'failed', events: 0 }) };
    case 'wait': {
      const status = job.attempts > 0 ? 'deferred' : 'queued';
      return { update: { status, next_attempt_at: final.retryAt, attempts: job.attempts, last_response: final.reason }, then: async () => ({ result: 'waiting', events: 0 }) };
    }
    case 'deferred':
      return {
        update: leave({ status: 'deferred', next_attempt_at: final.next, attempts: job.attempts + 1, last_response: final.diagnostic }),
        async then(trx, at) {
          await insertAttempt(trx, job, final.attempt, 'deferred', at);
          await rollupCounter(trx, { ...job, at }, 'deferred');
          // one event per retry step: only a row still ours gets here, so a step is never reported twice
          await recordEvent(trx, { ...eventBase(job, at), type: 'message.deferred', data: deferredData(job, final, at) });
          return { result: 'deferred', events: 1 };
        },
      };
    case 'bounced': {
      const attempts = job.attempts + (final.attempt ? 1 : 0);
      const update = leave({ status: 'bounced', bounced_at: now, next_attempt_at: null, attempts, last_response: final.bounce.diagnostic });
      return { update, then: (trx, at) => recordBounce(trx, job, final, at) };
    }
    case 'delivered': {
      const update = leave({ status: 'delivered', sent_at: now, delivered_at: now, next_attempt_at: null, attempts: job.attempts + 1, last_response: final.attempt.response });
      return { update, then: (trx, at) => recordDelivery(trx, job, final, at) };
    }
  }
}

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

async function recordBounce(trx: Tx, job: Job, o: Extract<Outcome, { kind: 'bounced' }>, now: number): Promise<Recorded> {
  const { bounce } = o;
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

async function recordDelivery(trx: Tx, job: Job, o: Extract<Outcome, { kind: 'delivered' }>, now: number): Promise<Recorded> {
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

/**
 * The extension event of a deferral: one per retry step, since each deferral counts one attempt and sets the
 * next, and only while the lease is ours (leave() above), so a step is never reported twice.
 */
function deferredData(job: Job, d: Extract<Final, { kind: 'deferred' }>, now: number): Record<string, unknown> {
  return messageEventData(job, {
    deferred_at: iso(now),
    attempt: job.attempts + 1,
    next_attempt_at: iso(d.next),
    code: d.attempt?.code ?? null,
    enhanced_code: d.attempt?.enhancedCode ?? null,
    response: d.attempt?.response ?? d.diagnostic,
    ...(d.attempt?.mx ? { mx_host: d.attempt.mx } : {}),
  });
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
    tls_version: a.tlsVersion ?? null,
    tls_verified: a.tlsVerified ?? null,
    tls_policy: a.tlsPolicy ?? null,
    tls_failure: a.tlsFailure ?? null,
    smtp_code: a.code,
    enhanced_code: a.enhancedCode,
    response: a.response,
    outcome,
    duration_ms: a.durationMs,
    transcript: a.transcript ?? null,
  }]);
  await countTlsSession(trx, a, now); // RFC 8460 report material, for domains that ask for it
}
