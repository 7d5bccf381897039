// @ts-check
/**
 * Core tables shared by every module: accounts and their API keys and
 * settings, the billing counter, and the message/event/suppression tables the
 * accept path, the MTA, webhooks and analytics all build on.
 * Times are integer milliseconds since the epoch (UTC); JSON columns are text.
 */

/** @param {import('knex').Knex} knex */
exports.up = async function up(knex) {
  // An account owns keys, domains, webhooks, pools and suppressions.
  await knex.schema.createTable('accounts', (t) => {
    t.string('id').primary();
    t.string('name').notNullable().unique('accounts_name_unique');
    t.bigInteger('created_at').notNullable();
  });

  // API keys: only the SHA-256 of the key is stored, plus a short visible prefix.
  await knex.schema.createTable('api_keys', (t) => {
    t.string('id').primary();
    t.string('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.string('name').notNullable();
    t.string('mode').notNullable(); // test | live
    t.string('prefix').notNullable();
    t.string('key_hash').notNullable().unique('api_keys_hash_unique');
    t.text('scopes').notNullable(); // JSON array
    t.bigInteger('created_at').notNullable();
    t.bigInteger('last_used_at');
    t.bigInteger('revoked_at');
    t.index(['account_id', 'id'], 'api_keys_account_idx');
  });

  // Per-account settings (IP allowlist for now).
  await knex.schema.createTable('account_settings', (t) => {
    t.string('account_id').primary().references('accounts.id').onDelete('CASCADE');
    t.text('allowed_ips').notNullable().defaultTo('[]'); // JSON array of addresses/CIDRs
    t.bigInteger('updated_at').notNullable();
  });

  // Billable usage: live messages accepted per account and calendar month (UTC).
  await knex.schema.createTable('usage_counters', (t) => {
    t.string('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.string('month').notNullable(); // YYYY-MM
    t.integer('messages').notNullable().defaultTo(0);
    t.primary(['account_id', 'month']);
  });

  // Idempotency-Key records of POST /v1/messages/send (kept 24 h).
  await knex.schema.createTable('idempotency_keys', (t) => {
    t.string('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.string('mode').notNullable();
    t.string('key').notNullable();
    t.string('request_hash').notNullable();
    t.string('state').notNullable(); // pending | done
    t.integer('status_code');
    t.text('response'); // JSON
    t.bigInteger('created_at').notNullable();
    t.primary(['account_id', 'mode', 'key']);
    t.index(['created_at'], 'idempotency_created_idx');
  });

  // The MIME of a message; copies of one send without substitutions share it.
  await knex.schema.createTable('message_contents', (t) => {
    t.string('id').primary();
    t.binary('raw').notNullable(); // DKIM-signed bytes once signed
    t.integer('size').notNullable();
    t.boolean('signed').notNullable().defaultTo(false);
    t.bigInteger('created_at').notNullable();
  });

  // One row per recipient copy. Queue state lives here too: a row is due when
  // next_attempt_at <= now and no live lease holds it.
  await knex.schema.createTable('messages', (t) => {
    t.string('id').primary();
    t.string('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.string('mode').notNullable();
    t.string('status').notNullable();
    t.string('batch_id').notNullable(); // one send request
    t.string('content_id').notNullable().references('message_contents.id');
    t.string('from_email').notNullable();
    t.string('from_name');
    t.string('to_email').notNullable(); // envelope recipient of this copy
    t.string('to_name');
    t.string('rcpt_type').notNullable().defaultTo('to'); // to | cc | bcc
    t.string('recipient_domain').notNullable();
    t.string('sending_domain').notNullable();
    t.boolean('domain_verified').notNullable().defaultTo(false);
    t.text('cc'); // JSON array of addresses shown in the Cc header
    t.text('subject');
    t.text('tags').notNullable().defaultTo('[]');
    t.text('metadata').notNullable().defaultTo('{}');
    t.string('ip_pool');
    t.boolean('track_opens').notNullable().defaultTo(false);
    t.boolean('track_clicks').notNullable().defaultTo(false);
    t.boolean('list_unsubscribe').notNullable().defaultTo(false);
    t.string('message_id_header').notNullable(); // RFC 5322 Message-ID, without <>
    t.string('source'); // api | smtp
    t.bigInteger('send_at');
    t.bigInteger('next_attempt_at'); // null once the message has left the queue
    t.integer('attempts').notNullable().defaultTo(0);
    t.string('lease_owner');
    t.bigInteger('lease_expires_at');
    t.text('last_response');
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.bigInteger('sent_at');
    t.bigInteger('delivered_at');
    t.bigInteger('bounced_at');
    t.index(['account_id', 'mode', 'id'], 'messages_list_idx');
    t.index(['account_id', 'mode', 'status', 'id'], 'messages_status_idx');
    t.index(['account_id', 'mode', 'to_email'], 'messages_to_idx');
    t.index(['message_id_header'], 'messages_header_idx');
  });
  // The queue's "next due" query reads only rows still waiting.
  await knex.raw('CREATE INDEX messages_due_idx ON messages (next_attempt_at) WHERE next_attempt_at IS NOT NULL');

  // Every attempt to hand a message to a remote MX.
  await knex.schema.createTable('message_attempts', (t) => {
    t.increments('id');
    t.string('message_id').notNullable().references('messages.id').onDelete('CASCADE');
    t.bigInteger('attempted_at').notNullable();
    t.string('mx_host');
    t.string('source_ip');
    t.boolean('tls');
    t.integer('smtp_code');
    t.string('enhanced_code');
    t.text('response');
    t.string('outcome').notNullable(); // delivered | deferred | bounced | failed
    t.integer('duration_ms');
    t.index(['message_id'], 'message_attempts_message_idx');
  });

  // The event log: source of webhooks and analytics.
  await knex.schema.createTable('events', (t) => {
    t.string('id').primary();
    t.string('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.string('mode').notNullable();
    t.string('type').notNullable();
    t.string('message_id');
    t.text('data').notNullable(); // JSON: the envelope's data object
    t.bigInteger('created_at').notNullable();
    t.index(['message_id'], 'events_message_idx');
    t.index(['account_id', 'mode', 'created_at'], 'events_account_time_idx');
  });

  // Sending domains of an account (the domains module adds its key tables).
  await knex.schema.createTable('domains', (t) => {
    t.string('id').primary();
    t.string('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.string('name').notNullable(); // lower-case, punycode
    t.string('status').notNullable(); // pending | verified | failing
    t.bigInteger('created_at').notNullable();
    t.bigInteger('verified_at');
    t.bigInteger('last_checked_at');
    t.bigInteger('failing_since');
    t.unique(['account_id', 'name'], { indexName: 'domains_account_name_unique' });
    t.index(['account_id', 'id'], 'domains_list_idx');
  });

  // IP pools: named sets of the configured source addresses.
  await knex.schema.createTable('ip_pools', (t) => {
    t.string('id').primary();
    t.string('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.string('name').notNullable();
    t.bigInteger('created_at').notNullable();
    t.unique(['account_id', 'name'], { indexName: 'ip_pools_account_name_unique' });
  });
  await knex.schema.createTable('ip_pool_members', (t) => {
    t.string('pool_id').notNullable().references('ip_pools.id').onDelete('CASCADE');
    t.string('address').notNullable();
    t.primary(['pool_id', 'address']);
  });

  // Addresses never to send to, per account (both modes).
  await knex.schema.createTable('suppressions', (t) => {
    t.string('id').primary();
    t.string('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.string('email').notNullable(); // normalised: trimmed, lower-case
    t.string('reason').notNullable();
    t.string('source_message_id');
    t.bigInteger('created_at').notNullable();
    t.unique(['account_id', 'email'], { indexName: 'suppressions_account_email_unique' });
    t.index(['account_id', 'id'], 'suppressions_list_idx');
  });
};

/** @param {import('knex').Knex} knex */
exports.down = async function down(knex) {
  for (const table of [
    'suppressions', 'ip_pool_members', 'ip_pools', 'domains', 'events', 'message_attempts', 'messages', 'message_contents',
    'idempotency_keys', 'usage_counters', 'account_settings', 'api_keys', 'accounts',
  ]) {
    await knex.schema.dropTableIfExists(table);
  }
};
