// @ts-check
/**
 * A second DKIM key per domain: besides its key (role `primary`, RSA or
 * Ed25519 as the domain was created), a domain may have an Ed25519 key (role
 * `second`) whose signature is added on top of the primary one (RFC 8463
 * suggests signing with both while receivers learn Ed25519). Each role has at
 * most one active and one pending (rotation) key.
 */

/** @param {import('knex').Knex} knex */
exports.up = async function up(knex) {
  await knex.schema.alterTable('domain_keys', (t) => {
    t.string('role').notNullable().defaultTo('primary'); // primary | second
  });
};

/** @param {import('knex').Knex} knex */
exports.down = async function down(knex) {
  await knex('domain_keys').where({ role: 'second' }).delete();
  await knex.schema.alterTable('domain_keys', (t) => {
    t.dropColumn('role');
  });
};
