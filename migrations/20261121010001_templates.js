// @ts-check
/**
 * Tables of the messages module: stored templates (a Pigeon extension). The
 * message tables themselves are core (20261121000001_core.js).
 */

/** @param {import('knex').Knex} knex */
exports.up = async function up(knex) {
  // Stored Handlebars templates an account sends with `template_id`; shared by both modes.
  await knex.schema.createTable('templates', (t) => {
    t.string('id').primary();
    t.string('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.string('name').notNullable();
    t.text('subject').notNullable();
    t.text('html');
    t.text('text');
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.unique(['account_id', 'name'], { indexName: 'templates_account_name_unique' });
    t.index(['account_id', 'id'], 'templates_list_idx');
  });
};

/** @param {import('knex').Knex} knex */
exports.down = async function down(knex) {
  await knex.schema.dropTableIfExists('templates');
};
