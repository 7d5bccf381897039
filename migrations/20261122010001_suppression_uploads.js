// @ts-check
/**
 * Suppression uploads in bounded batches. An upload writes its rows straight
 * into `suppressions`, a few thousand per transaction, each row tagged with
 * the upload's id; while the upload's `suppression_uploads` row exists those
 * rows are invisible to every reader (see src/suppressions/store.ts). Deleting
 * that one row is the commit: the whole file becomes visible at once. An
 * upload that fails deletes its tagged rows in batches, then its row; one left
 * behind by a crash is cleaned up the same way at the next start.
 */

/** @param {import('knex').Knex} knex */
exports.up = async function up(knex) {
  // One row per upload in progress; the unique account_id is the "one upload at a time" lock.
  await knex.schema.createTable('suppression_uploads', (t) => {
    t.string('id').primary(); // upl_…, the tag on its rows in suppressions.upload_id
    t.string('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.string('owner').notNullable(); // the server process running it; another owner at start-up means it crashed
    t.string('first_row_id').notNullable(); // every row of the upload has suppressions.id >= this (ids are ordered)
    t.bigInteger('started_at').notNullable();
    t.unique(['account_id'], { indexName: 'suppression_uploads_account_unique' });
  });

  // The upload that wrote a row; null for rows added one by one. A row is visible unless its upload is still in suppression_uploads.
  await knex.schema.alterTable('suppressions', (t) => {
    t.string('upload_id');
  });
};

/** @param {import('knex').Knex} knex */
exports.down = async function down(knex) {
  // Rows of an upload that never finished were never part of the list.
  await knex.raw('DELETE FROM suppressions WHERE upload_id IN (SELECT id FROM suppression_uploads)');
  await knex.schema.alterTable('suppressions', (t) => {
    t.dropColumn('upload_id');
  });
  await knex.schema.dropTableIfExists('suppression_uploads');
};
