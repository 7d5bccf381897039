/**
 * `pigeon settings reset-allowlist [--account NAME]`: the operator's way back
 * in when an account's IP allowlist shuts out every key (PUT
 * /v1/settings/security can only be undone through the API from an allowed
 * address). Takes effect on a running server within the settings cache's 2 s.
 */
import { findAccountByName } from '../auth/accounts';
import { SecuritySettings } from '../auth/settings';
import { systemClock } from '../clock';
import { CliContext, UsageError, flagString, withDb } from './common';

const USAGE = 'usage: pigeon settings reset-allowlist [--account NAME]';

export async function settingsCommand(ctx: CliContext): Promise<void> {
  const [action] = ctx.args;
  if (action !== 'reset-allowlist') throw new UsageError(USAGE);
  const accountName = flagString(ctx, 'account') ?? 'default';
  const previous = await withDb(ctx.config, async (db) => {
    const account = await findAccountByName(db, accountName);
    if (!account) throw new UsageError(`no account named '${accountName}'`);
    const settings = new SecuritySettings(db, systemClock);
    const entries = await settings.allowedIps(account.id);
    await settings.setAllowedIps(account.id, []);
    return entries;
  });
  if (ctx.flags.json) return ctx.out(JSON.stringify({ account: accountName, allowed_ips: [], removed: previous }));
  ctx.out(`cleared the IP allowlist of '${accountName}' (${previous.length} entr${previous.length === 1 ? 'y' : 'ies'} removed); every address may call the API again`);
}
