/** Read-only questions other modules ask about sending domains. */
import type { Queryable } from '../db';
import { lookupName } from './name';

/**
 * True when the account has this exact domain (not a parent) in status verified or failing-but-in-grace.
 * The name is normalised as stored (lower-case, IDN as punycode), so `bücher.example` finds `xn--bcher-kva.example`.
 */
export async function isVerifiedDomain(db: Queryable, accountId: string, domain: string): Promise<boolean> {
  const name = lookupName(domain);
  if (!name) return false;
  const row = await db('domains').where({ account_id: accountId, name }).whereIn('status', ['verified', 'failing']).first('id');
  return Boolean(row);
}

/**
 * `<returnPathLabel>.<domain>` when the account's domain has that record
 * verified (a CNAME to the bounce host), so the envelope sender can align with
 * the From domain for SPF; otherwise null (use the appliance's bounce domain).
 */
export async function getReturnPathDomain(db: Queryable, accountId: string, domain: string, returnPathLabel: string): Promise<string | null> {
  const name = lookupName(domain);
  if (!name) return null;
  const row = await db('domains')
    .join('domain_record_checks', 'domain_record_checks.domain_id', 'domains.id')
    .where({ 'domains.account_id': accountId, 'domains.name': name, 'domain_record_checks.record': 'return_path', 'domain_record_checks.state': 'verified' })
    .first('domains.name');
  return row ? `${returnPathLabel}.${row.name as string}` : null;
}
