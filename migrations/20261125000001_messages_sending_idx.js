// @ts-check
/**
 * The messages in flight (`sending`), by lease owner: a partial index that
 * holds only the rows leased right now (the MTA's slots, a hundred or so),
 * whatever the queue's depth. At start each node returns its predecessor's
 * leases to the queue, and the MTA looks for the next lease to expire; without
 * this index both read the whole messages table (with 10⁶ queued: 0.3 s, and
 * every page of the table mapped into the process). Queries must spell the
 * status as a literal (`status = 'sending'`), not a bound value, for SQLite to
 * know the index covers them.
 */

/** @param {import('knex').Knex} knex */
exports.up = async function up(knex) {
  await knex.raw("CREATE INDEX messages_sending_idx ON messages (lease_owner) WHERE status = 'sending'");
};

/** @param {import('knex').Knex} knex */
exports.down = async function down(knex) {
  await knex.raw('DROP INDEX messages_sending_idx');
};
