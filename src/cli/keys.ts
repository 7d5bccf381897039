/** `pigeon accounts create` and `pigeon keys create|list|revoke`. */
import { createAccount, findAccountByName } from '../auth/accounts';
import { createKey, listKeys, revokeKey, type ApiKey } from '../auth/keys';
import { addRelayNetworks, conflictingNetworks, networksOfKeys, parseRelayNetwork } from '../auth/relay-networks';
import { isScope, Mode, Scope, SCOPES } from '../auth/scopes';
import { shapeKey } from '../auth/routes';
import { iso } from '../clock';
import type { Queryable } from '../db';
import { CliContext, UsageError, flagList, flagString, withDb } from './common';

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

function parseNetworks(ctx: CliContext, scopes: Scope[]): string[] {
  const networks = [...new Set(flagList(ctx, 'relay-from').map((value) => {
    try {
      return parseRelayNetwork(value);
    } catch (err) {
      throw new UsageError(`--relay-from ${(err as Error).message}`);
    }
  }))];
  if (networks.length && !scopes.includes('messages:send')) throw new UsageError('--relay-from needs a key with the messages:send scope');
  return networks;
}

/** The overlap rule: one client address must name one account (see src/auth/relay-networks.ts). */
async function refuseOverlaps(db: Queryable, accountId: string, networks: string[]): Promise<void> {
  const conflicts = await conflictingNetworks(db, accountId, networks);
  if (conflicts.length === 0) return;
  const list = conflicts.map((c) => `${c.network} overlaps ${c.other.network} (key ${c.other.keyId} of another account)`);
  throw new UsageError(`refused: ${list.join('; ')}; a relay network may not overlap another account's`);
}

async function createKeyCommand(ctx: CliContext): Promise<void> {
  const mode = flagString(ctx, 'mode');
  if (mode !== 'test' && mode !== 'live') throw new UsageError('--mode test|live is required');
  const scopes = parseScopes(flagString(ctx, 'scopes'));
  const networks = parseNetworks(ctx, scopes);
  const accountName = flagString(ctx, 'account') ?? 'default';
  const name = flagString(ctx, 'name') ?? `${mode} key`;
  const created = await withDb(ctx.config, (db) => db.transaction(async (trx) => {
    const account = await findAccountByName(trx, accountName);
    if (!account) throw new UsageError(`no account named '${accountName}' (pigeon accounts create ${accountName})`);
    await refuseOverlaps(trx, account.id, networks);
    const made = await createKey(trx, { accountId: account.id, name, mode: mode as Mode, scopes }, Date.now());
    await addRelayNetworks(trx, made.key.id, account.id, networks, Date.now());
    return made;
  }));
  ctx.out(ctx.flags.json ? JSON.stringify({ ...cliKey(created.key, networks), key: created.secret }) : created.secret);
}

const cliKey = (k: ApiKey, networks: string[]) => ({ ...shapeKey(k), account_id: k.accountId, relay_from: networks });

async function listKeysCommand(ctx: CliContext): Promise<void> {
  const accountName = flagString(ctx, 'account');
  const { keys, networks } = await withDb(ctx.config, async (db) => {
    const account = accountName ? await findAccountByName(db, accountName) : undefined;
    if (accountName && !account) throw new UsageError(`no account named '${accountName}'`);
    const items = (await listKeys(db, account?.id, 10_000)).items;
    return { keys: items, networks: await networksOfKeys(db, items.map((k) => k.id)) };
  });
  if (ctx.flags.json) {
    ctx.out(JSON.stringify(keys.map((k) => cliKey(k, networks.get(k.id) ?? []))));
    return;
  }
  for (const k of keys) {
    const state = k.revokedAt ? 'revoked' : 'active';
    const relay = networks.get(k.id)?.join(',') ?? '';
    ctx.out([k.id, k.prefix + '…', k.mode, state, k.name, k.scopes.join(','), relay ? `relay-from=${relay}` : ''].join('\t').trimEnd());
  }
}
