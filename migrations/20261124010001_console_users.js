// @ts-check
/**
 * Console users and their sessions. A user signs in to the web console with
 * email and password (scrypt hash, per-user salt); a session is a random
 * cookie value stored only as its SHA-256, so a copy of the database cannot
 * be replayed as a cookie. Set-password tokens are single-use and stored
 * hashed the same way.
 */

/** @param {import('knex').Knex} knex */
exports.up = async function up(knex) {
  // users: console sign-ins; role admin (every account, operator routes) or member (one account)
  await knex.schema.createTable('users', (t) => {
    t.string('id').primary();
    t.string('email').notNullable(); // stored lower-cased: unique case-insensitively
    t.string('password_hash'); // null until the one-time link was used
    t.string('role').notNullable(); // admin | member
    t.string('account_id').references('id').inTable('accounts'); // member: required; admin: home account
    t.bigInteger('created_at').notNullable();
    t.boolean('disabled').notNullable().defaultTo(false);
    t.unique(['email'], { indexName: 'users_email_unique' });
  });
  // user_sessions: one row per signed-in browser; expires idle or absolute (config console.*)
  await knex.schema.createTable('user_sessions', (t) => {
    t.string('token_hash').primary(); // hex SHA-256 of the cookie value
    t.string('user_id').notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.string('csrf_token').notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('last_seen_at').notNullable();
    t.index(['user_id'], 'user_sessions_user');
  });
  // password_tokens: one-time set-password links
  await knex.schema.createTable('password_tokens', (t) => {
    t.string('token_hash').primary();
    t.string('user_id').notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.bigInteger('expires_at').notNullable();
    t.index(['user_id'], 'password_tokens_user');
  });
};

/** @param {import('knex').Knex} knex */
exports.down = async function down(knex) {
  await knex.schema.dropTable('password_tokens');
  await knex.schema.dropTable('user_sessions');
  await knex.schema.dropTable('users');
};
