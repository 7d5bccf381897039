/** Helpers shared by CLI commands: config + database for one-shot commands, usage errors. */
import { loadConfig, Config } from '../config';
import { Db, migrateLatest, openDatabase } from '../db';
import { toolNews } from '../db/notify';

export class UsageError extends Error {}

export interface CliContext {
  config: Config;
  args: string[];
  flags: Record<string, string | string[] | boolean | undefined>;
  out: (line: string) => void;
}

/**
 * Opens the database (migrated), runs fn, and always closes it. On PostgreSQL the running nodes then hear
 * which of their caches fn's writes made stale (db/notify.ts).
 */
export async function withDb<T>(config: Config, fn: (db: Db) => Promise<T>): Promise<T> {
  const db = openDatabase(config);
  const news = toolNews(config, db);
  try {
    await migrateLatest(db);
    return await fn(db);
  } finally {
    // Even after a failure: what committed before it should reach the nodes too. Without this they see it within their caches' TTLs.
    await news.send().catch((err: Error) => process.stderr.write(`warning: could not notify the running nodes: ${err.message}\n`));
    await db.destroy();
  }
}

export function flagString(ctx: CliContext, name: string): string | undefined {
  const v = ctx.flags[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw new UsageError(`--${name} needs a value`);
  return v;
}

export { loadConfig };

/** A repeatable flag (`--relay-from A --relay-from B`); commas separate values too. */
export function flagList(ctx: CliContext, name: string): string[] {
  const v = ctx.flags[name];
  if (v === undefined) return [];
  if (typeof v === 'boolean') throw new UsageError(`--${name} needs a value`);
  return (Array.isArray(v) ? v : [v]).flatMap((s) => s.split(',')).map((s) => s.trim()).filter(Boolean);
}
