/*
 * Messages and events written straight to the database, for tests of the
 * modules that read them (analytics, tracking). Events go through the real
 * recordEvent, so the rollup sink and any other sink run exactly as in
 * production.
 */
import type { Db } from '../../src/db';
import { newId } from '../../src/ids';
import { messageEventData, recordEvent, RecordedEvent } from '../../src/events/record';
import type { Mode } from '../../src/auth/scopes';

export interface MessageSeed {
  accountId: string;
  mode?: Mode;
  toEmail?: string;
  fromEmail?: string;
  tags?: string[];
  metadata?: Record<string, string>;
  ipPool?: string | null;
  createdAt: number;
  status?: string;
  subject?: string;
  raw?: Buffer;
}

export interface SeededMessage {
  id: string;
  accountId: string;
  mode: Mode;
  toEmail: string;
  fromEmail: string;
  tags: string[];
  metadata: Record<string, string>;
  sendingDomain: string;
  recipientDomain: string;
  ipPool: string | null;
}

export async function defaultAccountId(db: Db): Promise<string> {
  const row = await db('accounts').where({ name: 'default' }).first('id');
  return row.id as string;
}

export async function insertMessage(db: Db, seed: MessageSeed): Promise<SeededMessage> {
  const toEmail = seed.toEmail ?? 'someone@example.org';
  const fromEmail = seed.fromEmail ?? 'app@sender.example';
  const m: SeededMessage = {
    id: newId('msg'),
    accountId: seed.accountId,
    mode: seed.mode ?? 'test',
    toEmail,
    fromEmail,
    tags: seed.tags ?? [],
    metadata: seed.metadata ?? {},
    sendingDomain: fromEmail.split('@')[1],
    recipientDomain: toEmail.split('@')[1],
    ipPool: seed.ipPool ?? null,
  };
  const contentId = newId('mc');
  const raw = seed.raw ?? Buffer.from('Subject: test\r\n\r\nhello\r\n');
  await db('message_contents').insert({ id: contentId, raw, size: raw.length, signed: false, created_at: seed.createdAt });
  await db('messages').insert({
    id: m.id,
    account_id: m.accountId,
    mode: m.mode,
    status: seed.status ?? 'queued',
    batch_id: newId('bat'),
    content_id: contentId,
    from_email: fromEmail,
    to_email: toEmail,
    recipient_domain: m.recipientDomain,
    sending_domain: m.sendingDomain,
    subject: seed.subject ?? 'test',
    tags: JSON.stringify(m.tags),
    metadata: JSON.stringify(m.metadata),
    ip_pool: m.ipPool,
    message_id_header: `${m.id}@test`,
    created_at: seed.createdAt,
    updated_at: seed.createdAt,
  });
  return m;
}

/** Records one event of a seeded message through recordEvent, in its own transaction. */
export async function recordMessageEvent(db: Db, m: SeededMessage, type: string, at: number, fields: Record<string, unknown> = {}): Promise<RecordedEvent> {
  return db.transaction((trx) =>
    recordEvent(trx, { accountId: m.accountId, mode: m.mode, type, messageId: m.id, at, data: messageEventData(m, fields) }));
}

/** Deterministic PRNG (mulberry32) so a failing property run can be replayed from its seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
