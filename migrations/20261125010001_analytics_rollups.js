// @ts-check
/**
 * One rollup table for the two: `analytics_totals` and `analytics_domains`
 * become `analytics_rollups`, whose `recipient_domain` is '' on the rows that
 * count every recipient domain together (the totals) and a domain's name on
 * the breakdown's rows.
 *
 * Why: every recorded outcome adds to both row sets in the transaction that
 * records it. Two tables cost two upsert statements on the writer's one
 * connection per commit; one table takes both row sets in one multi-row
 * upsert (src/analytics/rollup.ts).
 *
 * Two indexes, one per way of reading:
 * - the key puts `recipient_domain` before `bucket`, so a totals query
 *   (`recipient_domain = ''` and a bucket range) reads only total rows,
 *   however many recipient domains an account has;
 * - `analytics_rollups_bucket_idx` serves the breakdown (every domain in a
 *   bucket range). A new row is written once per hour, day or month of each
 *   combination; the additions after it change no indexed column.
 *
 * Several nodes on PostgreSQL: stop them all before starting the first one
 * on this release. A node of the release before writes the two tables this
 * drops, and its outcome transactions would fail.
 */

const METRICS = [
  'sent', 'delivered', 'bounced_hard', 'bounced_soft', 'complained',
  'opened_total', 'opened_unique', 'clicked_total', 'clicked_unique', 'suppressed', 'deferred',
];

const DIMS = ['account_id', 'mode', 'tag', 'grain', 'bucket', 'sending_domain', 'ip_pool'];

/** @param {import('knex').Knex.CreateTableBuilder} t */
function metricColumns(t) {
  for (const m of METRICS) t.integer(m).notNullable().defaultTo(0);
}

/** @param {import('knex').Knex} knex */
exports.up = async function up(knex) {
  await knex.schema.createTable('analytics_rollups', (t) => {
    t.string('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.string('mode').notNullable();
    t.string('tag').notNullable(); // '' = every message; otherwise one tag's row set
    t.string('grain').notNullable(); // h | d | m (m only on recipient-domain rows)
    t.string('recipient_domain').notNullable(); // '' = every recipient domain (the totals)
    t.bigInteger('bucket').notNullable(); // UTC ms at the start of the hour, day or month
    t.string('sending_domain').notNullable();
    t.string('ip_pool').notNullable();
    metricColumns(t);
  });
  // the rows first, then the indexes: building an index once is cheaper than keeping it up during the copy
  const columns = [...DIMS, ...METRICS].join(', ');
  await knex.raw(`INSERT INTO analytics_rollups (recipient_domain, ${columns}) SELECT '', ${columns} FROM analytics_totals`);
  await knex.raw(`INSERT INTO analytics_rollups (recipient_domain, ${columns}) SELECT recipient_domain, ${columns} FROM analytics_domains`);
  await knex.schema.alterTable('analytics_rollups', (t) => {
    t.unique(['account_id', 'mode', 'tag', 'grain', 'recipient_domain', 'bucket', 'sending_domain', 'ip_pool'], {
      indexName: 'analytics_rollups_key',
    });
    t.index(['account_id', 'mode', 'tag', 'grain', 'bucket'], 'analytics_rollups_bucket_idx');
  });
  await knex.schema.dropTable('analytics_totals');
  await knex.schema.dropTable('analytics_domains');
};

/** @param {import('knex').Knex} knex */
exports.down = async function down(knex) {
  await knex.schema.createTable('analytics_totals', (t) => {
    t.string('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.string('mode').notNullable();
    t.string('tag').notNullable();
    t.string('grain').notNullable();
    t.bigInteger('bucket').notNullable();
    t.string('sending_domain').notNullable();
    t.string('ip_pool').notNullable();
    metricColumns(t);
    t.unique(DIMS, { indexName: 'analytics_totals_key' });
  });
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
  const columns = [...DIMS, ...METRICS].join(', ');
  await knex.raw(`INSERT INTO analytics_totals (${columns}) SELECT ${columns} FROM analytics_rollups WHERE recipient_domain = ''`);
  await knex.raw(`INSERT INTO analytics_domains (recipient_domain, ${columns}) SELECT recipient_domain, ${columns} FROM analytics_rollups WHERE recipient_domain <> ''`);
  await knex.schema.dropTable('analytics_rollups');
};
