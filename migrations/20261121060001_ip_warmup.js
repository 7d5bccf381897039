// @ts-check
/**
 * IP pools, part two (the core migration made `ip_pools` and
 * `ip_pool_members`): per-account pool settings, and the state of each source
 * address. An IP's reputation is global — every account that sends from it
 * shares it — so warm-up progress, daily counters and throttling are kept per
 * address, not per account or pool. Days are UTC calendar days ('YYYY-MM-DD').
 */

/** @param {import('knex').Knex} knex */
exports.up = async function up(knex) {
  // What an account's pool does when none of its addresses has budget left.
  // Keyed by name because the `default` pool has no ip_pools row.
  await knex.schema.createTable('ip_pool_settings', (t) => {
    t.string('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.string('pool_name').notNullable();
    t.string('overflow').notNullable().defaultTo('queue'); // queue | <pool name of the same account>
    t.bigInteger('updated_at').notNullable();
    t.primary(['account_id', 'pool_name']);
  });

  // Warm-up state of one source address (no row: the address is warm).
  await knex.schema.createTable('ip_warmups', (t) => {
    t.string('address').primary(); // as written in config `ips`
    t.string('status').notNullable(); // warming | paused | warm
    t.string('schedule_name').notNullable(); // standard | custom
    t.text('schedule').notNullable(); // JSON array of daily caps
    t.integer('day_index').notNullable().defaultTo(0); // 0-based: day N = day_index + 1
    t.string('day_date'); // UTC day the current day_index was first used for sending
    t.bigInteger('started_at').notNullable();
    t.bigInteger('paused_at');
    t.bigInteger('finished_at');
    t.string('finished_reason'); // completed | stopped
    t.bigInteger('updated_at').notNullable();
  });

  // Messages attempted from one address on one UTC day toward one provider
  // (gmail, microsoft, yahoo, apple, … or other). Warm-up budgets read these.
  await knex.schema.createTable('ip_daily_usage', (t) => {
    t.string('address').notNullable();
    t.string('day').notNullable();
    t.string('provider').notNullable();
    t.integer('sent').notNullable().defaultTo(0);
    t.primary(['address', 'day', 'provider']);
    t.index(['day'], 'ip_daily_usage_day_idx');
  });

  // Cool-down of one address toward one destination after throttling replies.
  // destination: a provider id, or `domain:<recipient domain>` for the rest.
  await knex.schema.createTable('ip_throttles', (t) => {
    t.string('address').notNullable();
    t.string('destination').notNullable();
    t.integer('level').notNullable(); // 1.. : each level halves the rate
    t.string('reason').notNullable(); // rate_limited | reputation
    t.text('last_reply').notNullable();
    t.integer('hits').notNullable().defaultTo(1);
    t.bigInteger('since').notNullable();
    t.bigInteger('last_hit_at').notNullable();
    t.bigInteger('until').notNullable(); // the cool-down ends here
    t.bigInteger('next_send_at').notNullable(); // the earliest next message during the cool-down
    t.primary(['address', 'destination']);
    t.index(['until'], 'ip_throttles_until_idx');
  });
};

/** @param {import('knex').Knex} knex */
exports.down = async function down(knex) {
  for (const table of ['ip_throttles', 'ip_daily_usage', 'ip_warmups', 'ip_pool_settings']) {
    await knex.schema.dropTableIfExists(table);
  }
};
