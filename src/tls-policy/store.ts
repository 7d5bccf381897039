/**
 * Fetched MTA-STS policies in the database (`mta_sts_policies`), one per
 * recipient domain, kept until max_age ends: a restart or a policy host that
 * is down does not lower the bar a domain asked for (RFC 8461 §5.1).
 */
import fs from 'node:fs';
import tls from 'node:tls';
import type { Queryable } from '../db';
import type { StsMode, StsPolicy } from './policy';

export async function storedPolicy(db: Queryable, domain: string): Promise<StsPolicy | null> {
  const r = await db('mta_sts_policies').where({ domain }).first();
  if (!r) return null;
  return {
    id: r.policy_id, mode: r.mode as StsMode, mx: JSON.parse(r.mx) as string[], maxAge: Number(r.max_age), text: r.policy_text,
    fetchedAt: Number(r.fetched_at), expiresAt: Number(r.expires_at),
  };
}

export async function savePolicy(db: Queryable, domain: string, p: StsPolicy): Promise<void> {
  const row = {
    policy_id: p.id, mode: p.mode, mx: JSON.stringify(p.mx), max_age: p.maxAge, policy_text: p.text, fetched_at: p.fetchedAt, expires_at: p.expiresAt,
  };
  await db('mta_sts_policies').insert({ domain, ...row }).onConflict('domain').merge(row);
}

// Keyed by the operator's CA file setting: one entry per configured file.
const caCache = new Map<string, string[]>();

/** System roots plus delivery.tlsCaFile (node's `ca` replaces the roots otherwise); undefined without a file. */
export function deliveryCas(file: string): string[] | undefined {
  if (!file) return undefined;
  let cas = caCache.get(file);
  if (!cas) {
    try {
      cas = [...tls.rootCertificates, fs.readFileSync(file, 'utf8')];
    } catch (err) {
      throw new Error(`delivery.tlsCaFile: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
    caCache.set(file, cas);
  }
  return cas;
}
