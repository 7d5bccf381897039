// @ts-check
/**
 * Destinations (recipient domains) an operator paused from the console: the
 * MTA claims no message for a paused domain until it is resumed; the rows
 * wait in the queue as they are. One row per paused domain.
 */

/** @param {import('knex').Knex} knex */
exports.up = async function up(knex) {
  // paused_destinations: recipient domains the MTA does not deliver to for now
  await knex.schema.createTable('paused_destinations', (t) => {
    t.string('domain').primary(); // lower-case recipient domain, as messages.recipient_domain
    t.bigInteger('paused_at').notNullable();
    t.string('paused_by'); // the user id that paused it
  });
  // The operator's queue view groups waiting messages by destination.
  await knex.schema.alterTable('messages', (t) => {
    t.index(['recipient_domain', 'status'], 'messages_recipient_domain_idx');
  });
};

/** @param {import('knex').Knex} knex */
exports.down = async function down(knex) {
  await knex.schema.alterTable('messages', (t) => {
    t.dropIndex(['recipient_domain', 'status'], 'messages_recipient_domain_idx');
  });
  await knex.schema.dropTable('paused_destinations');
};
