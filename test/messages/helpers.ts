/** Shared bits of the messages tests: row counts, verified domains, extra keys and accounts. */
import { createAccount } from '../../src/auth/accounts';
import { createKey as createKeyRecord } from '../../src/auth/keys';
import { SCOPES } from '../../src/auth/scopes';
import { newId } from '../../src/ids';
import type { TestApp } from '../support/app';

export const TABLES = ['messages', 'message_contents', 'events', 'idempotency_keys', 'usage_counters'] as const;

/** Row count of every table the accept path writes. */
export async function counts(app: TestApp): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of TABLES) out[t] = Number((await app.db(t).count({ n: '*' }).first())?.n ?? 0);
  return out;
}

export async function defaultAccountId(app: TestApp): Promise<string> {
  return (await app.db('accounts').where({ name: 'default' }).first('id')).id as string;
}

/** Domains are managed by another module: insert a verified one directly. */
export async function addVerifiedDomain(app: TestApp, accountId: string, name: string): Promise<void> {
  const now = app.deps.clock.now();
  await app.db('domains').insert({ id: newId('dom'), account_id: accountId, name, status: 'verified', created_at: now, verified_at: now });
}

/** A second account with one key of the given mode holding every scope. */
export async function otherAccount(app: TestApp, mode: 'test' | 'live' = 'test'): Promise<{ accountId: string; key: string }> {
  const now = app.deps.clock.now();
  const account = await createAccount(app.db, `other-${newId('x').slice(-6)}`, now);
  const { secret } = await createKeyRecord(app.db, { accountId: account.id, name: 'other', mode, scopes: [...SCOPES] }, now);
  return { accountId: account.id, key: secret };
}

export const simpleSend = (over: Record<string, unknown> = {}) => ({
  from: 'Sender <sender@example.com>',
  to: ['rcpt@example.org'],
  subject: 'Hello',
  text: 'Hello there',
  ...over,
});

/**
 * Stops the app's delivery worker, for tests of the accept path that count rows and statuses: with the MTA
 * running, sandbox messages move on to sending/delivered and gain events while the test looks.
 */
export async function pauseDelivery(app: TestApp): Promise<void> {
  await app.workers.find((w) => w.name === 'delivery')?.stop();
}

/** Runs `work` while measuring the longest gap between ticks of a 10 ms timer (the app runs in this process). */
export async function withLoopWatch<T>(work: () => Promise<T>): Promise<{ result: T; maxGapMs: number }> {
  let last = performance.now();
  let maxGapMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    maxGapMs = Math.max(maxGapMs, now - last);
    last = now;
  }, 10);
  try {
    const result = await work();
    maxGapMs = Math.max(maxGapMs, performance.now() - last);
    return { result, maxGapMs };
  } finally {
    clearInterval(timer);
  }
}
