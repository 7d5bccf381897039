/** API shapes of message records (snake_case, ISO times). */
import { iso } from '../clock';
import type { AttemptRecord, EventRecord, MessageRecord } from './repository';

export function shapeMessage(m: MessageRecord) {
  return {
    id: m.id,
    status: m.status,
    mode: m.mode,
    sandbox: m.mode === 'test',
    batch_id: m.batchId,
    from: { email: m.fromEmail, name: m.fromName },
    to: { email: m.toEmail, name: m.toName, type: m.rcptType },
    cc: m.cc,
    subject: m.subject,
    tags: m.tags,
    metadata: m.metadata,
    ip_pool: m.ipPool,
    track_opens: m.trackOpens,
    track_clicks: m.trackClicks,
    list_unsubscribe: m.listUnsubscribe,
    domain_verified: m.domainVerified,
    source: m.source,
    message_id_header: m.messageIdHeader,
    attempt_count: m.attempts,
    last_response: m.lastResponse,
    created_at: iso(m.createdAt) as string,
    updated_at: iso(m.updatedAt) as string,
    send_at: iso(m.sendAt),
    sent_at: iso(m.sentAt),
    delivered_at: iso(m.deliveredAt),
    bounced_at: iso(m.bouncedAt),
  };
}

export const shapeAttempt = (a: AttemptRecord) => ({
  attempted_at: iso(a.attemptedAt) as string,
  mx_host: a.mxHost,
  source_ip: a.sourceIp,
  tls: a.tls,
  smtp_code: a.smtpCode,
  enhanced_code: a.enhancedCode,
  response: a.response,
  outcome: a.outcome,
  duration_ms: a.durationMs,
  transcript: a.transcript,
});

export const shapeEvent = (e: EventRecord) => ({ id: e.id, type: e.type, created_at: iso(e.createdAt) as string, data: e.data });
