/**
 * What the MTA can add to GET /v1/messages/{id} beyond the core tables: how
 * the message's content was signed. The messages module calls this; it never
 * reads the `dkim` column itself.
 */
import type { Queryable } from '../db';

/** "d=example.com s=pg202601ab12 a=rsa-sha256", "unsigned: no DKIM key for example.com", or null before the first attempt. */
export async function dkimNote(db: Queryable, messageId: string): Promise<string | null> {
  const row = await db('messages as m').join('message_contents as c', 'c.id', 'm.content_id').where('m.id', messageId).first('c.dkim');
  return row?.dkim ?? null;
}
