/**
 * The domains module's tables (domains, domain_keys, domain_record_checks,
 * domain_events) mapped to camelCase objects. Other modules never read these
 * tables; they call the functions exported by lookup.ts and signing.ts.
 */
import type { Queryable } from '../db';
import { fromJson, toJson } from '../db';
import { newId } from '../ids';
import type { DkimAlgorithm } from './keys';

export type DomainStatus = 'pending' | 'verified' | 'failing';
export type RecordState = 'pending' | 'verified' | 'mismatch' | 'missing' | 'temporary_error';
export type KeyStatus = 'active' | 'pending';
/** primary: the domain's key (RSA or Ed25519); second: an optional Ed25519 key for a second signature. */
export type KeyRole = 'primary' | 'second';

export interface Domain {
  id: string;
  accountId: string;
  name: string;
  status: DomainStatus;
  createdAt: number;
  verifiedAt: number | null;
  lastCheckedAt: number | null;
  failingSince: number | null;
}

export interface DomainKey {
  id: string;
  domainId: string;
  selector: string;
  algorithm: DkimAlgorithm;
  publicKey: string;
  status: KeyStatus;
  role: KeyRole;
  createdAt: number;
  activatedAt: number | null;
}

export interface RecordCheck {
  state: Exclude<RecordState, 'pending'>;
  /** What DNS returned instead, when the record is failing. */
  found: string[] | null;
  detail: string | null;
}

export interface StoredCheck extends RecordCheck {
  record: string;
  checkedAt: number;
}

interface DomainRow {
  id: string;
  account_id: string;
  name: string;
  status: DomainStatus;
  created_at: number;
  verified_at: number | null;
  last_checked_at: number | null;
  failing_since: number | null;
}

const num = (v: number | string | null): number | null => (v === null ? null : Number(v));

const toDomain = (r: DomainRow): Domain => ({
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  status: r.status,
  createdAt: Number(r.created_at),
  verifiedAt: num(r.verified_at),
  lastCheckedAt: num(r.last_checked_at),
  failingSince: num(r.failing_since),
});

export async function findDomain(db: Queryable, accountId: string, name: string): Promise<Domain | undefined> {
  const row = await db<DomainRow>('domains').where({ account_id: accountId, name }).first();
  return row && toDomain(row);
}

export async function findDomainById(db: Queryable, id: string): Promise<Domain | undefined> {
  const row = await db<DomainRow>('domains').where({ id }).first();
  return row && toDomain(row);
}

export async function insertDomain(db: Queryable, input: { accountId: string; name: string; now: number }): Promise<Domain> {
  const row: DomainRow = {
    id: newId('dom'),
    account_id: input.accountId,
    name: input.name,
    status: 'pending',
    created_at: input.now,
    verified_at: null,
    last_checked_at: null,
    failing_since: null,
  };
  await db('domains').insert(row);
  return toDomain(row);
}

export async function updateDomainState(db: Queryable, d: Domain): Promise<void> {
  await db('domains').where({ id: d.id }).update({
    status: d.status,
    verified_at: d.verifiedAt,
    last_checked_at: d.lastCheckedAt,
    failing_since: d.failingSince,
  });
}

export async function pageDomains(db: Queryable, accountId: string, limit: number, cursor?: string): Promise<{ items: Domain[]; total: number }> {
  const q = db<DomainRow>('domains').where({ account_id: accountId });
  const total = Number((await q.clone().count({ n: '*' }).first())?.n ?? 0);
  if (cursor) q.andWhere('id', '<', cursor);
  const rows = await q.orderBy('id', 'desc').limit(limit);
  return { items: rows.map(toDomain), total };
}

/** Verified and failing domains whose re-check is due, oldest check first. */
export async function dueForRecheck(db: Queryable, checkedBefore: number, failingBefore: number, limit: number): Promise<Domain[]> {
  const rows = await db<DomainRow>('domains')
    .where((w) =>
      w
        .whereIn('status', ['verified', 'failing'])
        .andWhere((c) => c.whereNull('last_checked_at').orWhere('last_checked_at', '<=', checkedBefore)),
    )
    .orWhere((w) => w.where('status', 'failing').andWhere('failing_since', '<=', failingBefore))
    .orderBy('last_checked_at', 'asc')
    .limit(limit);
  return rows.map(toDomain);
}

interface KeyRow {
  id: string;
  domain_id: string;
  selector: string;
  algorithm: DkimAlgorithm;
  public_key: string;
  private_key_sealed: string;
  status: KeyStatus;
  role: KeyRole;
  created_at: number;
  activated_at: number | null;
}

const toKey = (r: KeyRow): DomainKey => ({
  id: r.id,
  domainId: r.domain_id,
  selector: r.selector,
  algorithm: r.algorithm,
  publicKey: r.public_key,
  status: r.status,
  role: r.role,
  createdAt: Number(r.created_at),
  activatedAt: num(r.activated_at),
});

export async function insertKey(
  db: Queryable,
  key: { id: string; domainId: string; selector: string; algorithm: DkimAlgorithm; publicKey: string; sealed: string; status: KeyStatus; role?: KeyRole; now: number },
): Promise<void> {
  await db('domain_keys').insert({
    id: key.id,
    domain_id: key.domainId,
    selector: key.selector,
    algorithm: key.algorithm,
    public_key: key.publicKey,
    private_key_sealed: key.sealed,
    status: key.status,
    role: key.role ?? 'primary',
    created_at: key.now,
    activated_at: key.status === 'active' ? key.now : null,
  });
}

/** Keys of several domains at once (list pages): primary before second, active before pending. */
export async function keysOf(db: Queryable, domainIds: string[]): Promise<Map<string, DomainKey[]>> {
  const rows = domainIds.length ? await db<KeyRow>('domain_keys').whereIn('domain_id', domainIds).orderBy('id', 'asc') : [];
  const out = new Map<string, DomainKey[]>();
  for (const r of rows) out.set(r.domain_id, [...(out.get(r.domain_id) ?? []), toKey(r)]);
  const rank = (k: DomainKey) => (k.role === 'primary' ? 0 : 2) + (k.status === 'active' ? 0 : 1);
  for (const keys of out.values()) keys.sort((a, b) => rank(a) - rank(b));
  return out;
}

/** The sealed private keys of the active keys (primary, then second); only signing.ts calls this. */
export async function activeSealedKeys(db: Queryable, domainId: string): Promise<Array<DomainKey & { sealed: string }>> {
  const rows = await db<KeyRow>('domain_keys').where({ domain_id: domainId, status: 'active' });
  const rank = (role: KeyRole) => (role === 'primary' ? 0 : 1);
  return rows.map((row) => ({ ...toKey(row), sealed: row.private_key_sealed })).sort((x, y) => rank(x.role) - rank(y.role));
}

/** The pending key becomes the active one of its role; the old active key of that role is deleted (its record may then be removed). */
export async function promoteKey(db: Queryable, domainId: string, key: { id: string; role: KeyRole }, now: number): Promise<void> {
  const old = await db<KeyRow>('domain_keys').where({ domain_id: domainId, status: 'active', role: key.role }).first();
  if (old) {
    await db('domain_keys').where({ id: old.id }).delete();
    await db('domain_record_checks').where({ domain_id: domainId, record: `dkim:${old.selector}` }).delete();
  }
  await db('domain_keys').where({ id: key.id }).update({ status: 'active', activated_at: now });
}

interface CheckRow {
  domain_id: string;
  record: string;
  state: RecordCheck['state'];
  found: string | null;
  detail: string | null;
  checked_at: number;
}

/** Removes the domain's second (Ed25519) keys and their record checks. */
export async function deleteSecondKeys(db: Queryable, domainId: string): Promise<void> {
  const keys = await db<KeyRow>('domain_keys').where({ domain_id: domainId, role: 'second' });
  await db('domain_record_checks').where({ domain_id: domainId }).whereIn('record', keys.map((k) => `dkim:${k.selector}`)).delete();
  await db('domain_keys').where({ domain_id: domainId, role: 'second' }).delete();
}

export async function checksOf(db: Queryable, domainIds: string[]): Promise<Map<string, StoredCheck[]>> {
  const rows = domainIds.length ? await db<CheckRow>('domain_record_checks').whereIn('domain_id', domainIds) : [];
  const out = new Map<string, StoredCheck[]>();
  for (const r of rows) {
    const check: StoredCheck = { record: r.record, state: r.state, found: fromJson(r.found, null), detail: r.detail, checkedAt: Number(r.checked_at) };
    out.set(r.domain_id, [...(out.get(r.domain_id) ?? []), check]);
  }
  return out;
}

export async function saveChecks(db: Queryable, domainId: string, checks: Map<string, RecordCheck>, now: number): Promise<void> {
  for (const [record, c] of checks) {
    await db('domain_record_checks')
      .insert({ domain_id: domainId, record, state: c.state, found: toJson(c.found), detail: c.detail, checked_at: now })
      .onConflict(['domain_id', 'record'])
      .merge();
  }
}

export type DomainEventType = 'domain.verified' | 'domain.failing' | 'domain.unverified' | 'domain.dkim_rotated' | 'domain.deleted';

export interface DomainEvent {
  id: string;
  accountId: string;
  domainId: string;
  domain: string;
  type: DomainEventType;
  data: Record<string, unknown>;
  createdAt: number;
}

export async function insertDomainEvent(db: Queryable, e: Omit<DomainEvent, 'id'>): Promise<DomainEvent> {
  const event = { ...e, id: newId('evt') };
  await db('domain_events').insert({
    id: event.id,
    account_id: e.accountId,
    domain_id: e.domainId,
    domain: e.domain,
    type: e.type,
    data: toJson(e.data),
    created_at: e.createdAt,
  });
  return event;
}

/** Domain events after `afterId` (exclusive), oldest first: the webhooks dispatcher's feed. */
export async function domainEventsAfter(db: Queryable, afterId: string | null, limit = 100, accountId?: string): Promise<DomainEvent[]> {
  const q = db('domain_events').orderBy('id', 'asc').limit(limit);
  if (afterId) q.where('id', '>', afterId);
  if (accountId) q.andWhere({ account_id: accountId });
  const rows: Array<{ id: string; account_id: string; domain_id: string; domain: string; type: DomainEventType; data: string; created_at: number }> = await q;
  return rows.map((r) => ({
    id: r.id,
    accountId: r.account_id,
    domainId: r.domain_id,
    domain: r.domain,
    type: r.type,
    data: fromJson(r.data, {}),
    createdAt: Number(r.created_at),
  }));
}
