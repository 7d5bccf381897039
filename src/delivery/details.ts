/**
 * What the MTA can add to GET /v1/messages/{id} beyond the core tables: how
 * the message's content was signed. The messages module calls this; it never
 * reads the `dkim` columns itself.
 */
import type { Queryable } from '../db';

/** "d=example.com s=pg202601ab12 a=rsa-sha256", "unsigned: no DKIM key for example.com", or null before the first attempt. */
export async function dkimNote(db: Queryable, messageId: string): Promise<string | null> {
  // The message's own note (set with its outcome); the content row's for contents stored signed by a sibling.
  const row = await db('messages as m').join('message_contents as c', 'c.id', 'm.content_id').where('m.id', messageId).first('m.dkim as own', 'c.dkim as shared');
  return row?.own ?? row?.shared ?? null;
}
