// @ts-check
/**
 * Delivery: how each content was signed. `message_contents.dkim` says which
 * key signed the stored bytes ("d=example.com s=pigeon1 a=rsa-sha256") or why
 * they went out unsigned ("unsigned: no DKIM key for example.com"); null until
 * the MTA has prepared the content for its first attempt.
 */

/** @param {import('knex').Knex} knex */
exports.up = async function up(knex) {
  await knex.schema.alterTable('message_contents', (t) => {
    t.text('dkim');
  });
};

/** @param {import('knex').Knex} knex */
exports.down = async function down(knex) {
  await knex.schema.alterTable('message_contents', (t) => {
    t.dropColumn('dkim');
  });
};
