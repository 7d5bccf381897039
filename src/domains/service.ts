/**
 * The domains service: add, list, show, verify, rotate and delete sending
 * domains. Routes and the CLI both call these; they throw ApiError for the
 * caller's mistakes (422 invalid name, 404, 409) and shape nothing.
 */
import type { Clock } from '../clock';
import type { Config } from '../config';
import type { Db } from '../db';
import type { DnsResolver } from '../dns/resolver';
import type { Logger } from '../logger';
import type { Signals } from '../signals';
import { newId } from '../ids';
import { conflict, notFound, unprocessable } from '../http/errors';
import { generateDkimKey, newSelector, sealPrivateKey, type DkimAlgorithm, type KeySource } from './keys';
import { lookupName, normalizeDomainName } from './name';
import { forgetAccountDomains } from './lookup';
import {
  checksOf, deleteSecondKeys, findDomain, insertDomain, insertKey, keysOf, pageDomains,
  type Domain, type DomainKey, type KeyRole, type KeyStatus, type StoredCheck,
} from './repository';
import { recordDomainEvent, verifyDomain } from './verify';
import { checkCap } from '../auth/limits';

export interface DomainsContext {
  db: Db;
  config: Config;
  clock: Clock;
  log?: Logger;
  signals?: Signals;
  /** Defaults to a resolver on `dns.servers` with `domains.dnsTimeoutMs`. */
  resolver?: DnsResolver;
  /** Defaults to config.dataDir (its secret.key). */
  keySource?: KeySource;
}

/** A domain with its keys and last record checks: everything a view needs. */
export interface DomainBundle {
  domain: Domain;
  keys: DomainKey[];
  checks: StoredCheck[];
}

/** Messages still waiting to leave; deleting their domain cancels them. */
const UNSENT = ['scheduled', 'queued', 'deferred'];

async function bundles(ctx: DomainsContext, domains: Domain[]): Promise<DomainBundle[]> {
  const ids = domains.map((d) => d.id);
  const [keys, checks] = await Promise.all([keysOf(ctx.db, ids), checksOf(ctx.db, ids)]);
  return domains.map((domain) => ({ domain, keys: keys.get(domain.id) ?? [], checks: checks.get(domain.id) ?? [] }));
}

async function requireDomain(ctx: DomainsContext, accountId: string, name: string): Promise<Domain> {
  const normalized = lookupName(name);
  const domain = normalized ? await findDomain(ctx.db, accountId, normalized) : undefined;
  if (!domain) throw notFound('domain', 'domain');
  return domain;
}

export interface NewDomainInput {
  name: string;
  dkimAlgorithm?: DkimAlgorithm;
  /** Also an Ed25519 key, for a second signature (an RSA domain only). */
  dkimEd25519?: boolean;
  /** limits.domainsPerAccount for API callers; the operator's CLI passes none. */
  maxDomains?: number;
}

export async function addDomain(ctx: DomainsContext, accountId: string, input: NewDomainInput): Promise<DomainBundle> {
  const parsed = normalizeDomainName(input.name);
  if (!parsed.ok) throw unprocessable('invalid_domain', `name ${parsed.reason}`, 'name');
  const exists = () => conflict('domain_exists', `the account already has the domain ${parsed.name}`, 'name');
  if (await findDomain(ctx.db, accountId, parsed.name)) throw exists();
  // Before the key is generated: an RSA key costs CPU the cap is there to bound.
  if (input.maxDomains !== undefined) {
    checkCap((await pageDomains(ctx.db, accountId, 0)).total, input.maxDomains, 'sending domains', 'domainsPerAccount');
  }
  if (input.dkimEd25519 && input.dkimAlgorithm === 'ed25519') {
    throw unprocessable('invalid_dkim', 'dkim_ed25519 adds an Ed25519 signature to an RSA key; this domain\'s key is Ed25519 already', 'dkim_ed25519');
  }
  const primary = await newKey(ctx, input.dkimAlgorithm ?? 'rsa', 'primary', [], 'active');
  // A new domain's keys are all active: none is published yet, and the domain verifies only once all of them are.
  const second = input.dkimEd25519 ? await newKey(ctx, 'ed25519', 'second', [primary.selector], 'active') : undefined;
  try {
    const domain = await ctx.db.transaction(async (trx) => {
      const d = await insertDomain(trx, { accountId, name: parsed.name, now: ctx.clock.now() });
      for (const key of second ? [primary, second] : [primary]) await insertKey(trx, { ...key, domainId: d.id });
      return d;
    });
    forgetAccountDomains(ctx.db, accountId);
    ctx.log?.info({ domain: domain.name, accountId, dkimAlgorithm: primary.algorithm, dkimEd25519: Boolean(second) }, 'domain added');
    return (await bundles(ctx, [domain]))[0];
  } catch (err) {
    // Two adds of the same name at once: the unique index decides.
    if (/UNIQUE constraint failed: domains/.test((err as Error).message)) throw exists();
    throw err;
  }
}

export async function listDomains(ctx: DomainsContext, accountId: string, limit: number, cursor?: string): Promise<{ items: DomainBundle[]; total: number }> {
  const page = await pageDomains(ctx.db, accountId, limit, cursor);
  return { items: await bundles(ctx, page.items), total: page.total };
}

export async function getDomain(ctx: DomainsContext, accountId: string, name: string): Promise<DomainBundle> {
  return (await bundles(ctx, [await requireDomain(ctx, accountId, name)]))[0];
}

export async function verifyDomainByName(ctx: DomainsContext, accountId: string, name: string): Promise<DomainBundle> {
  const checked = await verifyDomain(ctx, await requireDomain(ctx, accountId, name));
  if (!checked) throw notFound('domain', 'domain');
  return (await bundles(ctx, [checked]))[0];
}

type NewKey = Omit<Parameters<typeof insertKey>[1], 'domainId'>;

/** A key pair with a selector unused among `taken`, sealed, ready to insert. */
async function newKey(ctx: DomainsContext, algorithm: DkimAlgorithm, role: KeyRole, taken: string[], status: KeyStatus): Promise<NewKey> {
  const generated = await generateDkimKey(algorithm);
  const now = ctx.clock.now();
  const id = newId('dk');
  let selector = newSelector(now);
  while (taken.includes(selector)) selector = newSelector(now);
  const sealed = sealPrivateKey(ctx.keySource ?? ctx.config.dataDir, id, generated.privateKeyPem);
  return { id, selector, algorithm, publicKey: generated.publicKey, sealed, status, role, now };
}

/**
 * Starts a rotation of the domain's key (role primary) or of its Ed25519
 * second key: a pending key with a new selector, signing only once its record
 * verifies.
 */
export async function rotateDkim(ctx: DomainsContext, accountId: string, name: string, role: KeyRole = 'primary'): Promise<DomainBundle> {
  const domain = await requireDomain(ctx, accountId, name);
  const keys = (await keysOf(ctx.db, [domain.id])).get(domain.id) ?? [];
  const pending = keys.find((k) => k.status === 'pending' && k.role === role);
  if (pending) throw conflict('rotation_pending', `a rotation is already waiting for ${pending.selector}._domainkey.${domain.name} to verify`);
  const active = keys.find((k) => k.status === 'active' && k.role === role);
  if (!active && role === 'second') throw notFound('Ed25519 key', 'domain');
  const key = await newKey(ctx, active?.algorithm ?? 'rsa', role, keys.map((k) => k.selector), 'pending');
  await insertKey(ctx.db, { ...key, domainId: domain.id });
  forgetAccountDomains(ctx.db, accountId);
  ctx.log?.info({ domain: domain.name, accountId, selector: key.selector, role }, 'dkim rotation started');
  return (await bundles(ctx, [domain]))[0];
}

/**
 * Adds an Ed25519 key for a second signature to an RSA domain. It is pending
 * until its record verifies (then a domain.dkim_rotated event); from then on
 * every message carries both signatures and the record is required.
 */
export async function addEd25519Key(ctx: DomainsContext, accountId: string, name: string): Promise<DomainBundle> {
  const domain = await requireDomain(ctx, accountId, name);
  const keys = (await keysOf(ctx.db, [domain.id])).get(domain.id) ?? [];
  if (keys.some((k) => k.role === 'second')) throw conflict('dkim_ed25519_exists', `${domain.name} has an Ed25519 key already`);
  if (keys.some((k) => k.role === 'primary' && k.algorithm === 'ed25519')) {
    throw conflict('dkim_ed25519_primary', `${domain.name} signs with Ed25519 already; a second key is for RSA domains`);
  }
  const key = await newKey(ctx, 'ed25519', 'second', keys.map((k) => k.selector), 'pending');
  await insertKey(ctx.db, { ...key, domainId: domain.id });
  forgetAccountDomains(ctx.db, accountId);
  ctx.log?.info({ domain: domain.name, accountId, selector: key.selector }, 'dkim ed25519 key added');
  return (await bundles(ctx, [domain]))[0];
}

/** Removes the Ed25519 second key (active and pending): messages carry the primary signature only. */
export async function removeEd25519Key(ctx: DomainsContext, accountId: string, name: string): Promise<DomainBundle> {
  const domain = await requireDomain(ctx, accountId, name);
  const keys = (await keysOf(ctx.db, [domain.id])).get(domain.id) ?? [];
  if (!keys.some((k) => k.role === 'second')) throw notFound('Ed25519 key', 'domain');
  await ctx.db.transaction((trx) => deleteSecondKeys(trx, domain.id));
  forgetAccountDomains(ctx.db, accountId);
  ctx.log?.info({ domain: domain.name, accountId }, 'dkim ed25519 key removed');
  return (await bundles(ctx, [domain]))[0];
}

/**
 * Removes the domain, its keys and checks. Its messages that have not left yet
 * are cancelled in the same transaction; sent and delivered history stays.
 */
export async function deleteDomain(ctx: DomainsContext, accountId: string, name: string): Promise<{ name: string; cancelledMessages: number }> {
  const now = ctx.clock.now();
  const result = await ctx.db.transaction(async (trx) => {
    const normalized = lookupName(name);
    const domain = normalized ? await findDomain(trx, accountId, normalized) : undefined;
    if (!domain) throw notFound('domain', 'domain');
    const cancelled = await trx('messages')
      .where({ account_id: accountId, sending_domain: domain.name })
      .whereIn('status', UNSENT)
      .update({ status: 'cancelled', next_attempt_at: null, lease_owner: null, lease_expires_at: null, updated_at: now });
    await recordDomainEvent(trx, domain, 'domain.deleted', now, { cancelled_messages: cancelled });
    await trx('domains').where({ id: domain.id }).delete();
    return { name: domain.name, cancelledMessages: cancelled };
  });
  forgetAccountDomains(ctx.db, accountId);
  ctx.log?.info({ domain: result.name, accountId, cancelledMessages: result.cancelledMessages }, 'domain deleted');
  ctx.signals?.emit('domainEvents');
  return result;
}
