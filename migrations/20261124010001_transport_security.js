// @ts-check
/**
 * Transport security outbound (docs/tls.md):
 * - message_attempts gains what TLS looked like on each attempt: the version,
 *   whether the certificate verified for the MX name, the MTA-STS mode applied
 *   and, when TLS fell short of what the policy asks, the RFC 8460 result type;
 * - mta_sts_policies keeps each recipient domain's fetched policy until its
 *   max_age ends, so a restart or a policy host that is down does not lower
 *   the bar (RFC 8461 §5.1);
 * - tls_report_counts sums TLS sessions per reporting domain and UTC day, the
 *   material of the daily RFC 8460 report (one row per result and MX host).
 */

/** @param {import('knex').Knex} knex */
exports.up = async function up(knex) {
  await knex.schema.alterTable('message_attempts', (t) => {
    t.string('tls_version'); // e.g. TLSv1.3; null when the session stayed plain
    t.boolean('tls_verified'); // the MX certificate is valid for the MX name
    t.string('tls_policy'); // enforce | testing | none (MTA-STS mode); null: no policy
    t.string('tls_failure'); // RFC 8460 result-type when TLS fell short
  });
  await knex.schema.createTable('mta_sts_policies', (t) => {
    t.comment('MTA-STS policies of recipient domains, kept until max_age ends');
    t.string('domain').primary();
    t.string('policy_id').notNullable(); // id= of the _mta-sts TXT record it was fetched under
    t.string('mode').notNullable(); // enforce | testing | none
    t.text('mx').notNullable(); // JSON array of mx patterns
    t.integer('max_age').notNullable(); // seconds
    t.text('policy_text').notNullable(); // as served, for the TLS report's policy-string
    t.bigInteger('fetched_at').notNullable();
    t.bigInteger('expires_at').notNullable();
  });
  await knex.schema.createTable('tls_report_counts', (t) => {
    t.comment('TLS sessions per reporting domain and UTC day, for RFC 8460 reports');
    t.string('day').notNullable(); // YYYY-MM-DD (UTC)
    t.string('policy_domain').notNullable();
    t.string('policy_type').notNullable(); // sts | no-policy-found
    t.string('result').notNullable(); // success, or an RFC 8460 result-type
    t.string('sending_ip').notNullable();
    t.string('receiving_mx').notNullable(); // '' when no MX was dialled
    t.integer('sessions').notNullable().defaultTo(0);
    t.primary(['day', 'policy_domain', 'policy_type', 'result', 'sending_ip', 'receiving_mx']);
  });
};

/** @param {import('knex').Knex} knex */
exports.down = async function down(knex) {
  await knex.schema.dropTable('tls_report_counts');
  await knex.schema.dropTable('mta_sts_policies');
  await knex.schema.alterTable('message_attempts', (t) => {
    t.dropColumn('tls_failure');
    t.dropColumn('tls_policy');
    t.dropColumn('tls_verified');
    t.dropColumn('tls_version');
  });
};
