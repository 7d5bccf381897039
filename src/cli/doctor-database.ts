/**
 * `pigeon doctor`'s database checks, on whichever database the config points
 * at: it can be opened and is migrated (doctor applies pending migrations, as
 * `pigeon migrate` does), and on PostgreSQL also which server it is (claims
 * need 12 or later) and whether it has connections enough for this node.
 */
import type { Config } from '../config';
import { openDatabase, migrateLatest, rawRows, type Db } from '../db';
import type { CheckResult } from './doctor';

/** MATERIALIZED CTEs (the claims, docs/postgres.md) came with PostgreSQL 12. */
const MIN_SERVER_VERSION = 120000;
/**
 * Beside database.poolSize: the reader's 2 read-only sessions, the one held for the background-work election
 * (db/leader.ts) and the one listening for other nodes' news (db/notify.ts).
 */
const EXTRA_CONNECTIONS = 4;

export async function checkDatabase(config: Config): Promise<CheckResult[]> {
  const postgres = config.database.client === 'postgres';
  let db: Db | undefined;
  try {
    db = openDatabase(config);
    const applied = await migrateLatest(db);
    const version = await db.migrate.currentVersion();
    const migrations = `schema at migration ${version}${applied.length ? ` (${applied.length} applied now)` : ''}`;
    if (!postgres) return [{ name: 'database', status: 'ok', detail: `SQLite under ${config.dataDir} is reachable and migrated; ${migrations}` }];
    return await postgresChecks(db, config, migrations);
  } catch (err) {
    const hint = postgres ? 'check database.url or PIGEON_DATABASE_URL and that the server accepts this host' : 'check dataDir permissions';
    return [{ name: 'database', status: 'fail', detail: `cannot open the database: ${(err as Error).message}; ${hint}` }];
  } finally {
    await db?.destroy();
  }
}

interface ServerFacts {
  version: string;
  version_num: number;
  max_connections: number;
  reserved: number;
  in_use: number;
  database: string;
}

async function postgresChecks(db: Db, config: Config, migrations: string): Promise<CheckResult[]> {
  const [facts] = rawRows<ServerFacts>(await db.raw(`SELECT current_setting('server_version') AS version,
      current_setting('server_version_num')::int AS version_num,
      current_setting('max_connections')::int AS max_connections,
      current_setting('superuser_reserved_connections')::int AS reserved,
      (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')::int AS in_use,
      current_database() AS database`));
  const results: CheckResult[] = [
    { name: 'database', status: 'ok', detail: `PostgreSQL database ${facts.database} (database.url / PIGEON_DATABASE_URL) is reachable and migrated; ${migrations}` },
    facts.version_num >= MIN_SERVER_VERSION
      ? { name: 'database server', status: 'ok', detail: `PostgreSQL ${facts.version}` }
      : { name: 'database server', status: 'fail', detail: `PostgreSQL ${facts.version} is too old: Pigeon needs 12 or later (its queue claims use MATERIALIZED CTEs)` },
  ];
  // This check's own session is one of in_use; a running node of this config holds up to `needed` more.
  const needed = config.database.poolSize + EXTRA_CONNECTIONS;
  const free = facts.max_connections - facts.reserved - facts.in_use;
  const detail = `this node opens up to ${needed} connections (database.poolSize ${config.database.poolSize} + ${EXTRA_CONNECTIONS}); ` +
    `the server allows ${facts.max_connections - facts.reserved} (max_connections ${facts.max_connections} less ${facts.reserved} reserved), ${facts.in_use} in use now`;
  results.push(needed <= free
    ? { name: 'database connections', status: 'ok', detail }
    : { name: 'database connections', status: 'warn', detail: `${detail}: raise max_connections or lower database.poolSize, counting every node (README "Running several nodes")` });
  return results;
}
