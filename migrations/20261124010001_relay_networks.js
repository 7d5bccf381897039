// @ts-check
/**
 * Relay by network: an API key bound to networks (CIDR) lets SMTP clients from
 * those networks relay without AUTH, as that key. One row per network; the
 * account is kept beside the key so the overlap rule (no network may overlap
 * one of another account) is one read.
 */

/** @param {import('knex').Knex} knex */
exports.up = async function up(knex) {
  await knex.schema.createTable('relay_networks', (t) => {
    t.string('id').primary();
    t.string('key_id').notNullable().references('api_keys.id').onDelete('CASCADE');
    t.string('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.string('network').notNullable(); // normalised CIDR, e.g. 10.0.0.0/24
    t.bigInteger('created_at').notNullable();
    t.index(['key_id'], 'relay_networks_key_idx');
  });
};

/** @param {import('knex').Knex} knex */
exports.down = async function down(knex) {
  await knex.schema.dropTable('relay_networks');
};
