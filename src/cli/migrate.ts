/** `pigeon migrate`: apply pending migrations (the server also does this at start). */
import { migrateLatest, openDatabase } from '../db';
import type { CliContext } from './common';

export async function migrateCommand(ctx: CliContext): Promise<void> {
  const db = openDatabase(ctx.config);
  try {
    const applied = await migrateLatest(db);
    ctx.out(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
  } finally {
    await db.destroy();
  }
}
