/** `pigeon analytics rebuild [--account NAME]`: recompute the rollups from the events table. */
import { findAccountByName } from '../auth/accounts';
import { rebuildRollups } from '../analytics/rebuild';
import { CliContext, UsageError, flagString, withDb } from './common';

export async function analyticsCommand(ctx: CliContext): Promise<void> {
  const [action] = ctx.args;
  if (action !== 'rebuild') throw new UsageError('usage: pigeon analytics rebuild [--account NAME]');
  const name = flagString(ctx, 'account');
  await withDb(ctx.config, async (db) => {
    const account = name === undefined ? undefined : await findAccountByName(db, name);
    if (name !== undefined && !account) throw new UsageError(`no account named ${name}`);
    const started = process.hrtime.bigint();
    await rebuildRollups(db, account?.id);
    ctx.out(`rollups rebuilt${account ? ` for ${account.name}` : ''} in ${Number(process.hrtime.bigint() - started) / 1e6 | 0} ms`);
  });
}
