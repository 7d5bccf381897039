/**
 * `pigeon doctor` check: the Gmail/Yahoo sender requirements (sender-rules.ts)
 * for every verified or failing sending domain of every account, with what to
 * fix. Pending domains send no live mail and are left out.
 */
import { systemClock } from '../clock';
import type { Config } from '../config';
import { openDatabase } from '../db';
import type { CheckResult } from '../cli/doctor';
import { senderRules, type SenderRules } from './sender-rules';
import { secretKeyMismatch } from './secret-key-check';
import { listDomains, type DomainsContext } from './service';
import { verificationResolver } from './verify';

// Lookups at once: a doctor run stays quick without flooding the resolver.
const CONCURRENCY = 8;

function summary(name: string, r: SenderRules): CheckResult {
  const problems = [
    !r.dmarc.ok && `DMARC: ${r.dmarc.detail}`,
    !r.dkimAligned.ok && !r.spfAligned.ok && `neither DKIM nor SPF aligns: ${r.dkimAligned.detail}`,
    !r.oneClickUnsubscribe.ok && `one-click unsubscribe: ${r.oneClickUnsubscribe.detail}`,
  ].filter(Boolean);
  const aligned = [r.dkimAligned.ok && 'DKIM', r.spfAligned.ok && 'SPF'].filter(Boolean).join(' and ') || 'nothing';
  if (problems.length) return { name: `sender rules ${name}`, status: r.dmarc.temporary ? 'warn' : 'fail', detail: problems.join('; ') };
  return { name: `sender rules ${name}`, status: 'ok', detail: `DMARC p=${r.dmarc.policy}, ${aligned} aligned with the From domain, one-click unsubscribe for tags ${r.oneClickUnsubscribe.bulkTags.join(', ')}` };
}

export async function checkSenderRules(config: Config): Promise<CheckResult[]> {
  const db = openDatabase(config);
  try {
    const ctx: DomainsContext = { db, config, clock: systemClock };
    const accounts: Array<{ id: string }> = await db('accounts').select('id');
    const bundles = (await Promise.all(accounts.map(async (a) => (await listDomains(ctx, a.id, 10_000)).items))).flat()
      .filter((b) => b.domain.status !== 'pending');
    const resolver = verificationResolver(config);
    const results: CheckResult[] = [];
    for (let i = 0; i < bundles.length; i += CONCURRENCY) {
      const chunk = bundles.slice(i, i + CONCURRENCY);
      results.push(...(await Promise.all(chunk.map(async (b) => summary(b.domain.name, await senderRules(resolver, config, b))))));
    }
    return results;
  } catch {
    return []; // the database check reports an unreachable database
  } finally {
    await db.destroy();
  }
}

/** The dataDir's secret.key opens the DKIM keys in the database (secret-key-check.ts). */
export async function checkSecretKey(config: Config): Promise<CheckResult[]> {
  const db = openDatabase(config);
  try {
    const problem = await secretKeyMismatch(db, config.dataDir);
    if (problem) return [{ name: 'secret.key', status: 'fail', detail: problem }];
    return [{ name: 'secret.key', status: 'ok', detail: 'opens the DKIM keys in the database' }];
  } finally {
    await db.destroy();
  }
}
