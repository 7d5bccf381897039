/**
 * PostgreSQL, for scale-out: several nodes share one database (README
 * "Running several nodes"). The same knex queries and migrations run on it;
 * what differs is kept here and behind `isPostgres`:
 *
 * - Numbers: PostgreSQL answers int8 (COUNT, bigint columns: every time in
 *   ms) and numeric (SUM of a bigint) as strings, to be exact past 2^53.
 *   Pigeon's values are ms timestamps and counts, far below that, so they
 *   are parsed to numbers here and every module sees numbers, as on SQLite.
 * - The reader is a second small pool whose sessions are read-only (the
 *   analogue of SQLite's query_only): GETs do not take the writer pool's
 *   connections, and a stray write fails loudly.
 * - No PRAGMAs and no WAL checkpoint: the server does its own.
 */
import knex, { Knex } from 'knex';
import pg from 'pg';
import type { Config } from '../config';

const INT8 = 20;
const NUMERIC = 1700;

const types = {
  getTypeParser(oid: number, format?: string) {
    if (oid === INT8 || oid === NUMERIC) return (v: string) => Number(v);
    return pg.types.getTypeParser(oid, format as 'text');
  },
} as unknown as Knex.PgCustomTypesConfig;

/** PIGEON_DATABASE_URL wins over database.url, so the secret need not be in the config file. */
export function postgresUrl(config: Config): string {
  const url = process.env.PIGEON_DATABASE_URL || config.database.url;
  if (!url) throw new Error('database.client is postgres but neither database.url nor PIGEON_DATABASE_URL is set');
  return url;
}

/** A knex instance on PostgreSQL with up to `connections` connections; `readOnly` sessions refuse writes. */
export function postgresKnex(url: string, connections: number, migrationsDir: string, readOnly = false): Knex {
  return knex({
    client: 'pg',
    connection: { connectionString: url, types, ...(readOnly ? { options: '-c default_transaction_read_only=on' } : {}) },
    pool: { min: 0, max: connections },
    migrations: { directory: migrationsDir, loadExtensions: ['.js'] },
  });
}
