/**
 * `pigeon domains add|list|show|verify|rotate|delete`. Records print as
 * zone-file lines (comments start with ';'), so the output of `show` can be
 * pasted into a BIND-style zone file as it is.
 */
import { findAccountByName } from '../auth/accounts';
import { systemClock } from '../clock';
import type { Db } from '../db';
import { DKIM_ALGORITHMS, type DkimAlgorithm } from '../domains/keys';
import { zoneLine } from '../domains/records';
import {
  addDomain, addEd25519Key, deleteDomain, getDomain, listDomains, removeEd25519Key, rotateDkim, verifyDomainByName, type DomainsContext,
} from '../domains/service';
import { shapeDomain, type DomainView } from '../domains/view';
import { CliContext, UsageError, flagString, withDb } from './common';

const USAGE = 'usage: pigeon domains add|show|verify|rotate|delete NAME [--account NAME] [--algorithm rsa|ed25519] [--ed25519] [--json]\n' +
  '       pigeon domains ed25519-add|ed25519-remove NAME [--account NAME] [--json]\n' +
  '       pigeon domains list [--account NAME] [--json]';

async function accountId(db: Db, ctx: CliContext): Promise<string> {
  const name = flagString(ctx, 'account') ?? 'default';
  const account = await findAccountByName(db, name);
  if (!account) throw new UsageError(`no account named '${name}' (pigeon accounts create ${name})`);
  return account.id;
}

/** The domain and its records, each preceded by a comment with its state. */
export function formatDomain(view: DomainView): string[] {
  const lines = [`; ${view.name}: ${view.status}${view.dkim ? ` (signing with ${view.dkim.selector}, ${view.dkim.algorithm})` : ''}`];
  for (const r of view.dns_records) {
    const role = r.purpose !== 'dkim' ? r.purpose
      : r.key_role === 'second' ? `dkim, ed25519 second key${r.key_status === 'pending' ? ' (pending)' : ''}`
      : r.key_status === 'pending' ? 'dkim, rotation' : 'dkim';
    lines.push(`; ${role}${r.required ? ', required' : ', optional'}: ${r.state}${r.detail ? ` (${r.detail})` : ''}`);
    for (const f of r.found ?? []) lines.push(`;   found: ${f}`);
    lines.push(zoneLine(r));
  }
  return lines;
}

function algorithmFlag(ctx: CliContext): DkimAlgorithm | undefined {
  const value = flagString(ctx, 'algorithm');
  if (value !== undefined && !(DKIM_ALGORITHMS as readonly string[]).includes(value)) throw new UsageError('--algorithm must be rsa or ed25519');
  return value as DkimAlgorithm | undefined;
}

export async function domainsCommand(ctx: CliContext): Promise<void> {
  const [action, name] = ctx.args;
  if (action !== 'list' && (!action || !name)) throw new UsageError(USAGE);
  const print = (view: DomainView) => (ctx.flags.json ? ctx.out(JSON.stringify(view)) : formatDomain(view).forEach((l) => ctx.out(l)));
  await withDb(ctx.config, async (db) => {
    const service: DomainsContext = { db, config: ctx.config, clock: systemClock };
    const account = await accountId(db, ctx);
    const shape = (b: Parameters<typeof shapeDomain>[1]) => shapeDomain(ctx.config, b);
    switch (action) {
      case 'add':
        return print(shape(await addDomain(service, account, { name, dkimAlgorithm: algorithmFlag(ctx), dkimEd25519: Boolean(ctx.flags.ed25519) })));
      case 'show':
        return print(shape(await getDomain(service, account, name)));
      case 'verify':
        return print(shape(await verifyDomainByName(service, account, name)));
      case 'rotate': // --ed25519 rotates the Ed25519 second key
        return print(shape(await rotateDkim(service, account, name, ctx.flags.ed25519 ? 'second' : 'primary')));
      case 'ed25519-add':
        return print(shape(await addEd25519Key(service, account, name)));
      case 'ed25519-remove':
        return print(shape(await removeEd25519Key(service, account, name)));
      case 'delete': {
        const result = await deleteDomain(service, account, name);
        return ctx.out(`deleted ${result.name}; cancelled ${result.cancelledMessages} unsent message(s)`);
      }
      case 'list': {
        const views = (await listDomains(service, account, 10_000)).items.map(shape);
        if (ctx.flags.json) return ctx.out(JSON.stringify(views));
        for (const v of views) ctx.out([v.name, v.status, v.verified_at ?? '-', v.last_checked_at ?? '-'].join('\t'));
        return;
      }
      default:
        throw new UsageError(USAGE);
    }
  });
}
