/**
 * What the MTA knows about a message, for GET /v1/messages/{id}: every
 * delivery attempt (time, MX host, source IP, TLS, SMTP reply) and how its
 * content was signed. The messages module calls these; it never reads the
 * tables itself.
 */
import { iso } from '../clock';
import type { Queryable } from '../db';

export interface AttemptView {
  attempted_at: string;
  outcome: string;
  mx_host: string | null;
  source_ip: string | null;
  tls: boolean;
  smtp_code: number | null;
  enhanced_code: string | null;
  response: string | null;
  duration_ms: number | null;
}

/** Attempts of one message, oldest first, in the API's snake_case shape. */
export async function listAttempts(db: Queryable, messageId: string): Promise<AttemptView[]> {
  const rows = await db('message_attempts').where({ message_id: messageId }).orderBy('id');
  return rows.map((r) => ({
    attempted_at: iso(Number(r.attempted_at)) as string,
    outcome: r.outcome,
    mx_host: r.mx_host ?? null,
    source_ip: r.source_ip ?? null,
    tls: Boolean(r.tls),
    smtp_code: r.smtp_code ?? null,
    enhanced_code: r.enhanced_code ?? null,
    response: r.response ?? null,
    duration_ms: r.duration_ms ?? null,
  }));
}

/** "d=example.com s=pigeon1 a=rsa-sha256", "unsigned: no DKIM key for example.com", or null before the first attempt. */
export async function dkimNote(db: Queryable, messageId: string): Promise<string | null> {
  const row = await db('messages as m').join('message_contents as c', 'c.id', 'm.content_id').where('m.id', messageId).first('c.dkim');
  return row?.dkim ?? null;
}
