// @ts-check
/**
 * Webhooks carry a mode: the mode of the key that created them. A webhook
 * receives only the events of its mode, and only keys of that mode see it
 * (a sandbox key never changes what live mail does).
 *
 * Rows that exist before this migration become `live`: until now they received
 * live events, and production receivers must keep getting them. They stop
 * receiving sandbox events; an application that tests in the sandbox creates
 * its webhook again with a test key. Operators should review existing webhooks
 * after the upgrade, since one created by a sandbox key is now live.
 */

/** @param {import('knex').Knex} knex */
exports.up = async function up(knex) {
  await knex.schema.alterTable('webhooks', (t) => {
    t.string('mode').notNullable().defaultTo('live'); // test | live: the creating key's mode
  });
  await knex.schema.alterTable('webhooks', (t) => {
    t.index(['account_id', 'mode', 'id'], 'webhooks_account_mode_idx');
  });
};

/** @param {import('knex').Knex} knex */
exports.down = async function down(knex) {
  await knex.schema.alterTable('webhooks', (t) => {
    t.dropIndex(['account_id', 'mode', 'id'], 'webhooks_account_mode_idx');
  });
  // Plain DROP COLUMN (SQLite ≥ 3.35, PostgreSQL): no table rebuild, so no cascade onto deliveries.
  await knex.raw('ALTER TABLE webhooks DROP COLUMN mode');
};
