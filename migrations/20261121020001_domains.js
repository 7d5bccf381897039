// @ts-check
/**
 * Sending domains, part two (the core migration made `domains`): the DKIM keys
 * of each domain, the last DNS check of each of its records, and the log of
 * its state changes (verified, failing, unverified) that webhooks fan out.
 */

/** @param {import('knex').Knex} knex */
exports.up = async function up(knex) {
  // DKIM key pairs. One `active` key signs; a `pending` key (rotation) waits
  // for its record to verify and then replaces the active one. The private key
  // is sealed with AES-256-GCM under a key derived from <dataDir>/secret.key.
  await knex.schema.createTable('domain_keys', (t) => {
    t.string('id').primary();
    t.string('domain_id').notNullable().references('domains.id').onDelete('CASCADE');
    t.string('selector').notNullable();
    t.string('algorithm').notNullable(); // rsa | ed25519
    t.text('public_key').notNullable(); // the p= value: base64 SPKI (rsa) or raw 32 bytes (ed25519)
    t.text('private_key_sealed').notNullable(); // v1.<base64 iv|tag|ciphertext> of the PKCS#8 PEM
    t.string('status').notNullable(); // active | pending
    t.bigInteger('created_at').notNullable();
    t.bigInteger('activated_at');
    t.unique(['domain_id', 'selector'], { indexName: 'domain_keys_selector_unique' });
    t.index(['domain_id', 'status'], 'domain_keys_domain_idx');
  });

  // The outcome of the last DNS check of each record of a domain.
  // `record` is 'spf', 'dmarc', 'return_path' or 'dkim:<selector>'.
  await knex.schema.createTable('domain_record_checks', (t) => {
    t.string('domain_id').notNullable().references('domains.id').onDelete('CASCADE');
    t.string('record').notNullable();
    t.string('state').notNullable(); // verified | mismatch | missing | temporary_error
    t.text('found'); // JSON array of what DNS returned instead, when failing
    t.text('detail');
    t.bigInteger('checked_at').notNullable();
    t.primary(['domain_id', 'record']);
  });

  // Domain state changes, kept after the domain is deleted (no foreign key to
  // domains). The id is an `evt_` id so it can serve as a webhook envelope id.
  await knex.schema.createTable('domain_events', (t) => {
    t.string('id').primary();
    t.string('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.string('domain_id').notNullable();
    t.string('domain').notNullable();
    t.string('type').notNullable(); // domain.verified | domain.failing | domain.unverified | domain.dkim_rotated | domain.deleted
    t.text('data').notNullable(); // JSON
    t.bigInteger('created_at').notNullable();
    t.index(['account_id', 'id'], 'domain_events_account_idx');
  });

  // The re-check worker looks for verified/failing domains not checked lately.
  await knex.schema.alterTable('domains', (t) => {
    t.index(['status', 'last_checked_at'], 'domains_recheck_idx');
  });
};

/** @param {import('knex').Knex} knex */
exports.down = async function down(knex) {
  await knex.schema.alterTable('domains', (t) => {
    t.dropIndex(['status', 'last_checked_at'], 'domains_recheck_idx');
  });
  await knex.schema.dropTableIfExists('domain_events');
  await knex.schema.dropTableIfExists('domain_record_checks');
  await knex.schema.dropTableIfExists('domain_keys');
};
