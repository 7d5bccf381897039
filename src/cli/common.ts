/** Helpers shared by CLI commands: config + database for one-shot commands, usage errors. */
import { loadConfig, Config } from '../config';
import { Db, migrateLatest, openDatabase } from '../db';

export class UsageError extends Error {}

export interface CliContext {
  config: Config;
  args: string[];
  flags: Record<string, string | string[] | boolean | undefined>;
  out: (line: string) => void;
}

/** Opens the database (migrated), runs fn, and always closes it. */
export async function withDb<T>(config: Config, fn: (db: Db) => Promise<T>): Promise<T> {
  const db = openDatabase(config);
  try {
    await migrateLatest(db);
    return await fn(db);
  } finally {
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
