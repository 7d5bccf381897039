// @ts-check
/**
 * The reputation watch (src/reputation): per source address, the last result
 * of each check — one row per DNSBL zone and one for forward-confirmed reverse
 * DNS (check `fcrdns`). A failed lookup keeps the last known state and notes
 * the error beside it, so a resolver outage neither lists nor delists.
 */

/** @param {import('knex').Knex} knex */
exports.up = async function up(knex) {
  await knex.schema.createTable('ip_reputation', (t) => {
    t.string('address').notNullable(); // as written in config `ips`
    t.string('check_name').notNullable(); // a DNSBL zone, or `fcrdns` (not `check`: a reserved word in SQL)
    t.string('state').notNullable(); // listed | clear (DNSBL); ok | fail (fcrdns)
    t.text('detail'); // the zone's TXT reason, or what the PTR check found
    t.text('codes'); // JSON array of the zone's A answers while listed
    t.bigInteger('since').notNullable(); // when this state began
    t.bigInteger('checked_at').notNullable(); // the last lookup that answered
    t.text('error'); // the last lookup failed: why (state is the one before)
    t.bigInteger('error_at');
    t.primary(['address', 'check_name']);
  });
};

/** @param {import('knex').Knex} knex */
exports.down = async function down(knex) {
  await knex.schema.dropTable('ip_reputation');
};
