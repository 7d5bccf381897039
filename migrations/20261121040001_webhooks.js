// @ts-check
/**
 * Webhooks: the endpoints an account registers, one delivery row per
 * (event, matching webhook) written in the event's own transaction, and the
 * log of every HTTP attempt made for a delivery. Delivery rows double as the
 * dispatcher's queue (next_attempt_at + lease), like the messages table does
 * for the MTA. Times are integer milliseconds since the epoch (UTC).
 */

/** @param {import('knex').Knex} knex */
exports.up = async function up(knex) {
  // Endpoints of an account; they receive events of both modes (sandbox events say so in data).
  await knex.schema.createTable('webhooks', (t) => {
    t.string('id').primary();
    t.string('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('url').notNullable();
    t.text('events').notNullable(); // JSON array of event types, or ["*"]
    t.boolean('enabled').notNullable().defaultTo(true);
    t.text('secret').notNullable(); // signing secret; must stay recoverable to sign
    t.text('previous_secret'); // still signs until previous_secret_expires_at (rotation overlap)
    t.bigInteger('previous_secret_expires_at');
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.index(['account_id', 'id'], 'webhooks_account_idx');
  });

  // One row per (event, webhook). Pending rows are the dispatcher's queue: due when
  // next_attempt_at <= now and no live lease holds them. The body is rebuilt from
  // the events row, byte for byte, at every attempt.
  await knex.schema.createTable('webhook_deliveries', (t) => {
    t.string('id').primary();
    t.string('webhook_id').notNullable().references('webhooks.id').onDelete('CASCADE');
    t.string('account_id').notNullable();
    t.string('event_id').notNullable().references('events.id').onDelete('CASCADE');
    t.string('event_type').notNullable();
    t.string('status').notNullable(); // pending | succeeded | failed
    t.integer('attempts').notNullable().defaultTo(0); // every attempt ever made (Service-Delivery-Attempt)
    t.integer('cycle_start').notNullable().defaultTo(0); // attempts made before the current retry cycle (redeliver)
    t.bigInteger('next_attempt_at'); // null once succeeded or failed
    t.string('lease_owner');
    t.bigInteger('lease_expires_at');
    t.integer('last_status_code');
    t.text('last_error');
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    t.bigInteger('completed_at');
    t.index(['webhook_id', 'id'], 'webhook_deliveries_list_idx');
    t.index(['webhook_id', 'status', 'id'], 'webhook_deliveries_status_idx');
    t.index(['event_id'], 'webhook_deliveries_event_idx');
  });
  // The dispatcher reads only rows still waiting: the earliest overall (its timer) and the
  // earliest few of each webhook (its claim), so a dead endpoint's backlog is never scanned.
  await knex.raw(
    'CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE next_attempt_at IS NOT NULL',
  );
  await knex.raw(
    'CREATE INDEX webhook_deliveries_webhook_due_idx ON webhook_deliveries (webhook_id, next_attempt_at) WHERE next_attempt_at IS NOT NULL',
  );

  // Every HTTP attempt of a delivery: when, what came back, how long it took.
  await knex.schema.createTable('webhook_attempts', (t) => {
    t.increments('id');
    t.string('delivery_id').notNullable().references('webhook_deliveries.id').onDelete('CASCADE');
    t.integer('attempt').notNullable(); // 1-based, as sent in Service-Delivery-Attempt
    t.bigInteger('attempted_at').notNullable();
    t.boolean('success').notNullable();
    t.integer('status_code');
    t.integer('latency_ms').notNullable();
    t.text('response_body'); // first 1 KB of the answer
    t.text('error'); // timeout, connection refused, redirect not followed...
    t.index(['delivery_id', 'attempt'], 'webhook_attempts_delivery_idx');
  });
};

/** @param {import('knex').Knex} knex */
exports.down = async function down(knex) {
  for (const table of ['webhook_attempts', 'webhook_deliveries', 'webhooks']) {
    await knex.schema.dropTableIfExists(table);
  }
};
