/**
 * Relay by network: a key bound to networks (`pigeon keys create … --relay-from
 * 10.0.0.0/24`) lets SMTP clients from those networks relay without AUTH, as
 * that key. Everything else about such mail is the key's: its account, mode,
 * scopes, rate limit, the account's allowlist and sending domains.
 *
 * No network may overlap a network of another account, so a client address
 * names at most one account; the lookup refuses anyway when it finds two (a
 * row written around this rule), so one account can never send as another.
 * Networks of the same account may overlap: the most specific one wins.
 */
import ipaddr from 'ipaddr.js';
import type { Queryable } from '../db';
import { hasReader, readerOf } from '../db/reader';
import { newId } from '../ids';
import { cachePerApp, ReadCache } from '../util/read-cache';
import { normalizeAddress, parseEntry } from './allowlist';

export interface RelayNetwork {
  keyId: string;
  accountId: string;
  network: string;
}

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** Normalises "10.0.0.0/24" or a single address ("10.0.0.7" → "10.0.0.7/32"); throws with the reason. */
export function parseRelayNetwork(value: string): string {
  const parsed = parseEntry(value);
  if (!parsed.ok) throw new Error(`'${value}': ${parsed.message}`);
  const [addr, bits] = parsed.range;
  return `${addr.toString()}/${bits}`;
}

function rangeOf(network: string): Range {
  const parsed = parseEntry(network);
  if (!parsed.ok) throw new Error(`stored relay network '${network}' is invalid`);
  return parsed.range;
}

export function overlaps(a: string, b: string): boolean {
  const [na, ba] = rangeOf(a);
  const [nb, bb] = rangeOf(b);
  if (na.kind() !== nb.kind()) return false;
  return na.match(nb as never, bb) || nb.match(na as never, ba);
}

/** Networks of keys not revoked, for every account. Few rows (one per relaying device network). */
async function activeNetworks(db: Queryable): Promise<RelayNetwork[]> {
  const rows = await db('relay_networks as n')
    .join('api_keys as k', 'k.id', 'n.key_id')
    .whereNull('k.revoked_at')
    .select('n.key_id', 'n.account_id', 'n.network');
  return rows.map((r: { key_id: string; account_id: string; network: string }) => ({ keyId: r.key_id, accountId: r.account_id, network: r.network }));
}

export const RELAY_CACHE_TTL_MS = 2_000;
// One entry (the whole table): the key is a constant, never request input.
const ALL = 'all';
const relayCache = cachePerApp('relay-networks', hasReader, (db: Queryable) =>
  new ReadCache<string, RelayNetwork[]>({ max: 1, ttlMs: RELAY_CACHE_TTL_MS, load: (_all) => activeNetworks(readerOf(db)) }));

/** Called when a key is created or revoked, so this process sees the change at once. */
export function invalidateRelayNetworks(db: Queryable): void {
  relayCache.invalidate(db);
}

/** Networks of another account that `networks` would overlap (the reason to refuse them). */
export async function conflictingNetworks(db: Queryable, accountId: string, networks: string[]): Promise<Array<{ network: string; other: RelayNetwork }>> {
  const others = (await activeNetworks(db)).filter((n) => n.accountId !== accountId);
  const found: Array<{ network: string; other: RelayNetwork }> = [];
  for (const network of networks) for (const other of others) if (overlaps(network, other.network)) found.push({ network, other });
  return found;
}

export async function addRelayNetworks(db: Queryable, keyId: string, accountId: string, networks: string[], now: number): Promise<void> {
  if (networks.length === 0) return;
  await db('relay_networks').insert(networks.map((network) => ({ id: newId('net'), key_id: keyId, account_id: accountId, network, created_at: now })));
  invalidateRelayNetworks(db);
}

export async function networksOfKeys(db: Queryable, keyIds: string[]): Promise<Map<string, string[]>> {
  const byKey = new Map<string, string[]>();
  if (keyIds.length === 0) return byKey;
  const rows = await readerOf(db)('relay_networks').whereIn('key_id', keyIds).orderBy('network');
  for (const r of rows as Array<{ key_id: string; network: string }>) byKey.set(r.key_id, [...(byKey.get(r.key_id) ?? []), r.network]);
  return byKey;
}

/**
 * The key a client at `address` relays as, or undefined. When networks of two accounts match (possible only
 * if the overlap rule was bypassed), nobody relays: refusing is the only answer that cannot be wrong.
 */
export async function relayKeyFor(db: Queryable, address: string): Promise<RelayNetwork | undefined> {
  const all = (await relayCache(db)?.get(ALL)) ?? (await activeNetworks(db));
  if (all.length === 0) return undefined;
  let client: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    client = ipaddr.parse(normalizeAddress(address));
  } catch {
    return undefined;
  }
  const matches = all.filter((n) => {
    const [net, bits] = rangeOf(n.network);
    return net.kind() === client.kind() && client.match(net as never, bits);
  });
  if (new Set(matches.map((m) => m.accountId)).size !== 1) return undefined;
  const bits = (n: RelayNetwork) => rangeOf(n.network)[1];
  return matches.sort((a, b) => bits(b) - bits(a) || a.keyId.localeCompare(b.keyId))[0];
}
