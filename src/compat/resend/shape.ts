/** A native send (its recipient copies) as Resend's email object. */
import type { MessageRecord } from '../../messages/repository';

/** Resend's last_event for a native status. */
const LAST_EVENT: Record<string, string> = {
  scheduled: 'scheduled', queued: 'queued', sending: 'queued', sent: 'sent', delivered: 'delivered',
  deferred: 'delivery_delayed', bounced: 'bounced', cancelled: 'canceled', suppressed: 'failed', failed: 'failed',
};

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const named = (email: string, name: string | null) => (name ? `${name} <${email}>` : email);

/** html and text are not kept apart from the built MIME, so they are null (the native GET has the details). */
export function shapeEmail(copies: MessageRecord[]) {
  const first = copies[0];
  const of = (type: MessageRecord['rcptType']) => copies.filter((c) => c.rcptType === type).map((c) => named(c.toEmail, c.toName));
  return {
    object: 'email',
    id: first.batchId,
    from: named(first.fromEmail, first.fromName),
    to: of('to'),
    cc: of('cc'),
    bcc: of('bcc'),
    reply_to: null,
    subject: first.subject,
    html: null,
    text: null,
    created_at: iso(first.createdAt),
    scheduled_at: iso(first.sendAt),
    last_event: LAST_EVENT[first.status] ?? first.status,
    tags: Object.entries(first.metadata).map(([name, value]) => ({ name, value })),
    message_ids: copies.map((c) => c.id),
  };
}
