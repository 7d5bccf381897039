// @ts-check
/**
 * The SMTP conversation of each delivery attempt (commands and replies, the
 * message body elided), at most 16 KiB, for the console's message screen.
 * Null for attempts made before this column and for sandbox attempts.
 */

/** @param {import('knex').Knex} knex */
exports.up = async function up(knex) {
  await knex.schema.alterTable('message_attempts', (t) => {
    t.text('transcript');
  });
};

/** @param {import('knex').Knex} knex */
exports.down = async function down(knex) {
  await knex.schema.alterTable('message_attempts', (t) => {
    t.dropColumn('transcript');
  });
};
