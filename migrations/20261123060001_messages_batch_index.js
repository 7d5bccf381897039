// @ts-check
/**
 * Messages by send request (batch_id): the Resend compatibility layer reads,
 * reschedules and cancels a send as a whole, and Resend's id for a send is its batch_id.
 */

/** @param {import('knex').Knex} knex */
exports.up = async function up(knex) {
  await knex.schema.alterTable('messages', (t) => {
    t.index(['account_id', 'mode', 'batch_id'], 'messages_batch_idx');
  });
};

/** @param {import('knex').Knex} knex */
exports.down = async function down(knex) {
  await knex.schema.alterTable('messages', (t) => {
    t.dropIndex(['account_id', 'mode', 'batch_id'], 'messages_batch_idx');
  });
};
