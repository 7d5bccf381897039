// @ts-check
/**
 * Analytics rollups and the indexes the analytics export and suppression list
 * read by. Rollups are counters kept in the same transaction as each event (see
 * src/analytics/rollup.ts), so reading a year of statistics sums a few
 * thousand rows instead of millions of events.
 *
 * Grains: 'h' rows (bucket = start of a UTC hour) and 'd' rows (start of a UTC
 * day) in both tables, and 'm' rows (start of a UTC calendar month) in the
 * per-domain table. A range query reads the coarsest rows that fit inside it
 * and hour rows for its ragged ends.
 *
 * The `tag` column holds '' for the row set that counts every event exactly
 * once, and a tag name for the row set of messages carrying that tag. A query
 * reads exactly one row set, so a message with several tags is never counted
 * twice in a total.
 */

const METRICS = [
  'sent', 'delivered', 'bounced_hard', 'bounced_soft', 'complained',
  'opened_total', 'opened_unique', 'clicked_total', 'clicked_unique', 'suppressed', 'deferred',
];

/** @param {import('knex').Knex.CreateTableBuilder} t */
function metricColumns(t) {
  for (const m of METRICS) t.integer(m).notNullable().defaultTo(0);
}

/** @param {import('knex').Knex} knex */
exports.up = async function up(knex) {
  // Counters per account, mode, tag row set, grain, bucket, sending domain and IP pool:
  // the source of /v1/analytics/stats and /timeseries.
  await knex.schema.createTable('analytics_totals', (t) => {
    t.string('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.string('mode').notNullable();
    t.string('tag').notNullable(); // '' = every message; otherwise one tag's row set
    t.string('grain').notNullable(); // h | d (| m in analytics_domains)
    t.bigInteger('bucket').notNullable(); // UTC ms at the start of the hour or day
    t.string('sending_domain').notNullable();
    t.string('ip_pool').notNullable();
    metricColumns(t);
    t.unique(['account_id', 'mode', 'tag', 'grain', 'bucket', 'sending_domain', 'ip_pool'], { indexName: 'analytics_totals_key' });
  });

  // The same counters split by recipient domain: the source of /breakdown/domains.
  await knex.schema.createTable('analytics_domains', (t) => {
    t.string('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.string('mode').notNullable();
    t.string('tag').notNullable();
    t.string('grain').notNullable();
    t.bigInteger('bucket').notNullable();
    t.string('recipient_domain').notNullable();
    t.string('sending_domain').notNullable();
    t.string('ip_pool').notNullable();
    metricColumns(t);
    t.unique(['account_id', 'mode', 'tag', 'grain', 'bucket', 'recipient_domain', 'sending_domain', 'ip_pool'], {
      indexName: 'analytics_domains_key',
    });
  });

  // The messages export pages through one account's messages by creation time.
  await knex.schema.alterTable('messages', (t) => {
    t.index(['account_id', 'mode', 'created_at', 'id'], 'messages_account_created_idx');
  });

  // The suppression list filtered by reason, newest first.
  await knex.schema.alterTable('suppressions', (t) => {
    t.index(['account_id', 'reason', 'id'], 'suppressions_reason_idx');
  });
};

/** @param {import('knex').Knex} knex */
exports.down = async function down(knex) {
  await knex.schema.alterTable('suppressions', (t) => {
    t.dropIndex(['account_id', 'reason', 'id'], 'suppressions_reason_idx');
  });
  await knex.schema.alterTable('messages', (t) => {
    t.dropIndex(['account_id', 'mode', 'created_at', 'id'], 'messages_account_created_idx');
  });
  await knex.schema.dropTableIfExists('analytics_domains');
  await knex.schema.dropTableIfExists('analytics_totals');
};
