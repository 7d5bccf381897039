// @ts-check
/**
 * How a message was signed, on the message itself. The signed bytes are now
 * stored only when a retry may follow (a deferral): a message delivered or
 * bounced at its first attempt never needs them again, and writing ~5 KB per
 * message into the WAL was the largest write of the delivery path. The note
 * (selector, algorithm, or why it went unsigned) is still kept for
 * GET /v1/messages/{id}, here.
 */

/** @param {import('knex').Knex} knex */
exports.up = async function up(knex) {
  await knex.schema.alterTable('messages', (t) => {
    t.text('dkim').nullable();
  });
};

/** @param {import('knex').Knex} knex */
exports.down = async function down(knex) {
  await knex.schema.alterTable('messages', (t) => {
    t.dropColumn('dkim');
  });
};
