/**
 * The life of one suppression upload in the database: begin (take the
 * account's upload lock), commit (one single-row delete that makes every row
 * of the upload visible at once), abort (remove the upload's rows in bounded
 * batches, then the lock), and the start-up sweep that aborts uploads a
 * crashed process left behind. See the migration 20261122010001 for the model.
 */
import type { Db } from '../db';
import { isPostgres } from '../db';
import { newId, randomBase62 } from '../ids';
import { conflict } from '../http/errors';
import { WriterTurns } from './writer-turns';

/** This server process; an upload row with another owner found at start-up belongs to a process that is gone. */
export const PROCESS_OWNER = `pid${process.pid}-${randomBase62(12)}`;

/**
 * The owner written on this process's uploads: `<node>/pid…`, so that with several nodes on one PostgreSQL
 * database a node's start-up sweep finds its own earlier processes' uploads and leaves the other nodes' alone.
 */
export const uploadOwner = (node: string): string => (node ? `${node}/${PROCESS_OWNER}` : PROCESS_OWNER);

export interface UploadHandle {
  id: string;
  accountId: string;
  /** Every suppression id this upload issues sorts at or after it. */
  firstRowId: string;
}

/** Takes the account's upload lock; 409 upload_in_progress while another upload of the account runs. */
export async function beginUpload(db: Db, accountId: string, now: number, node = ''): Promise<UploadHandle> {
  const upload = { id: newId('upl'), accountId, firstRowId: newId('sup') };
  const inserted = await db('suppression_uploads')
    .insert({ id: upload.id, account_id: accountId, owner: uploadOwner(node), first_row_id: upload.firstRowId, started_at: now })
    .onConflict('account_id')
    .ignore()
    .returning('id');
  if (!inserted.length) {
    throw conflict('upload_in_progress', 'another suppression upload of this account is still running; try again when it has finished');
  }
  return upload;
}

/** The flip: once the upload's row is gone, its rows are part of the list. */
export async function commitUpload(db: Db, upload: UploadHandle): Promise<void> {
  await db('suppression_uploads').where({ id: upload.id }).delete();
}

/**
 * Deletes the upload's rows, `batchRows` per transaction so other writers get
 * turns, then releases the lock. Until the lock row goes the rows stay
 * invisible, so a crash half-way through changes nothing either.
 */
export async function abortUpload(db: Db, upload: UploadHandle, batchRows: number): Promise<void> {
  const turns = new WriterTurns(db);
  try {
    for (;;) {
      // By id, the primary key: SQLite's implicit rowid does not exist on PostgreSQL.
      const batch = db('suppressions').select('id')
        .where({ account_id: upload.accountId, upload_id: upload.id })
        .andWhere('id', '>=', upload.firstRowId)
        .limit(batchRows);
      let deleted = 0;
      await turns.run(async () => (deleted = await db('suppressions').whereIn('id', batch).delete()));
      if (deleted < batchRows) break;
    }
  } finally {
    turns.close();
  }
  await db('suppression_uploads').where({ id: upload.id }).delete();
}

/**
 * Aborts the uploads other (crashed) processes left behind; run once at start-up. On SQLite that is every
 * other owner's (one node per database); on PostgreSQL only those of this node's earlier processes, since
 * another node's upload may be running right now.
 */
export async function recoverInterruptedUploads(db: Db, batchRows: number, node = ''): Promise<number> {
  const stale: Array<{ id: string; account_id: string; first_row_id: string }> = await db('suppression_uploads')
    .whereNot({ owner: uploadOwner(node) })
    .modify((q) => {
      if (isPostgres(db)) q.where('owner', 'like', `${node.replace(/[\\%_]/g, (c) => `\\${c}`)}/%`);
    })
    .select('id', 'account_id', 'first_row_id');
  for (const row of stale) await abortUpload(db, { id: row.id, accountId: row.account_id, firstRowId: row.first_row_id }, batchRows);
  return stale.length;
}
