/** `pigeon accounts create` and `pigeon keys create|list|revoke`. */
import { createAccount, findAccountByName } from '../auth/accounts';
import { createKey, listKeys, revokeKey } from '../auth/keys';
import { isScope, Mode, Scope, SCOPES } from '../auth/scopes';
import { shapeKey } from '../auth/routes';
import { iso } from '../clock';
import { CliContext, UsageError, flagString, withDb } from './common';

export async function accountsCommand(ctx: CliContext): Promise<void> {
  const [action, name] = ctx.args;
  if (action !== 'create' || !name) throw new UsageError('usage: pigeon accounts create NAME');
  const account = await withDb(ctx.config, (db) => createAccount(db, name, Date.now()));
  ctx.out(ctx.flags.json ? JSON.stringify({ id: account.id, name: account.name, created_at: iso(account.createdAt) }) : account.id);
}

function parseScopes(value: string | undefined): Scope[] {
  if (!value || value === 'all') return [...SCOPES];
  const scopes = value.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = scopes.filter((s) => !isScope(s));
  if (unknown.length) throw new UsageError(`unknown scope(s): ${unknown.join(', ')}; known: ${SCOPES.join(', ')}`);
  return scopes as Scope[];
}

export async function keysCommand(ctx: CliContext): Promise<void> {
  const [action, id] = ctx.args;
  if (action === 'create') return createKeyCommand(ctx);
  if (action === 'list') return listKeysCommand(ctx);
  if (action === 'revoke') {
    if (!id) throw new UsageError('usage: pigeon keys revoke ID');
    const key = await withDb(ctx.config, (db) => revokeKey(db, id, Date.now()));
    if (!key) throw new UsageError(`no key with id ${id}`);
    ctx.out(ctx.flags.json ? JSON.stringify(shapeKey(key)) : `revoked ${key.id}`);
    return;
  }
  throw new UsageError('usage: pigeon keys create|list|revoke');
}

async function createKeyCommand(ctx: CliContext): Promise<void> {
  const mode = flagString(ctx, 'mode');
  if (mode !== 'test' && mode !== 'live') throw new UsageError('--mode test|live is required');
  const scopes = parseScopes(flagString(ctx, 'scopes'));
  const accountName = flagString(ctx, 'account') ?? 'default';
  const name = flagString(ctx, 'name') ?? `${mode} key`;
  const created = await withDb(ctx.config, async (db) => {
    const account = await findAccountByName(db, accountName);
    if (!account) throw new UsageError(`no account named '${accountName}' (pigeon accounts create ${accountName})`);
    return createKey(db, { accountId: account.id, name, mode: mode as Mode, scopes }, Date.now());
  });
  ctx.out(ctx.flags.json ? JSON.stringify({ ...shapeKey(created.key), account_id: created.key.accountId, key: created.secret }) : created.secret);
}

async function listKeysCommand(ctx: CliContext): Promise<void> {
  const accountName = flagString(ctx, 'account');
  const keys = await withDb(ctx.config, async (db) => {
    const account = accountName ? await findAccountByName(db, accountName) : undefined;
    if (accountName && !account) throw new UsageError(`no account named '${accountName}'`);
    return (await listKeys(db, account?.id, 10_000)).items;
  });
  if (ctx.flags.json) {
    ctx.out(JSON.stringify(keys.map((k) => ({ ...shapeKey(k), account_id: k.accountId }))));
    return;
  }
  for (const k of keys) {
    const state = k.revokedAt ? 'revoked' : 'active';
    ctx.out([k.id, k.prefix + '…', k.mode, state, k.name, k.scopes.join(',')].join('\t'));
  }
}
