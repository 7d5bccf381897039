/**
 * What needs a look, for the overview: sending domains whose DNS checks fail,
 * source addresses in a throttling cool-down, webhooks whose deliveries fail,
 * and the warm-up progress of the addresses the account sends from. Each is
 * a small indexed read over the account's own rows (or the configured IPs).
 */
import type { Config } from '../config';
import type { Queryable } from '../db';
import { usableIps } from '../pools/dedication';
import { ipStatuses } from '../pools/status';
import { DEFAULT_POOL } from '../pools/lookup';
import type { Scope } from './counts';

export interface Alert {
  kind: 'domain_dns' | 'ip_throttled' | 'webhook_failing';
  subject: string;
  detail: string;
}

/** Alerts of each kind listed at most. */
const ALERTS_PER_KIND = 20;
/** A webhook counts as failing when a delivery failed within this window, or one is being retried. */
const WEBHOOK_WINDOW_MS = 24 * 3600_000;

export async function domainAlerts(db: Queryable, scope: Scope): Promise<Alert[]> {
  const rows: Array<{ name: string; failing_since: number | null }> = await db('domains')
    .where({ account_id: scope.accountId, status: 'failing' }).select('name', 'failing_since').orderBy('name').limit(ALERTS_PER_KIND);
  return rows.map((r) => ({
    kind: 'domain_dns', subject: r.name,
    detail: `DNS records failing${r.failing_since ? ` since ${new Date(Number(r.failing_since)).toISOString()}` : ''}: GET /v1/domains/{id}/verify shows which`,
  }));
}

export async function webhookAlerts(db: Queryable, scope: Scope, now: number): Promise<Alert[]> {
  const rows: Array<{ id: string; url: string; failed: number; retrying: number }> = await db('webhooks as w')
    .join('webhook_deliveries as d', 'd.webhook_id', 'w.id')
    .where({ 'w.account_id': scope.accountId, 'w.mode': scope.mode })
    .andWhere((q) => q.where((f) => f.where('d.status', 'failed').andWhere('d.completed_at', '>=', now - WEBHOOK_WINDOW_MS))
      .orWhere((r) => r.where('d.status', 'pending').andWhere('d.attempts', '>', 0)))
    .groupBy('w.id', 'w.url').select('w.id', 'w.url')
    .select(db.raw("SUM(CASE WHEN d.status = 'failed' THEN 1 ELSE 0 END) AS failed"), db.raw("SUM(CASE WHEN d.status = 'pending' THEN 1 ELSE 0 END) AS retrying"))
    .orderBy('w.id').limit(ALERTS_PER_KIND);
  return rows.map((r) => ({
    kind: 'webhook_failing', subject: r.id,
    detail: `${r.url}: ${Number(r.failed)} deliveries failed in 24 h, ${Number(r.retrying)} being retried`,
  }));
}

/** Throttle alerts and warm-up rows for the addresses this account may send from. */
export async function ipOverview(db: Queryable, config: Pick<Config, 'ips' | 'pools'>, scope: Scope, now: number) {
  const addresses = (await usableIps(db, config, scope.accountId)).map((ip) => ip.address);
  if (!addresses.length) return { alerts: [] as Alert[], warmup: [] };
  const statuses = await ipStatuses(db, config, addresses, now);
  const pools = await poolsOf(db, scope.accountId);
  const alerts: Alert[] = [];
  const warmup = [];
  for (const status of statuses.values()) {
    for (const t of status.throttles.slice(0, ALERTS_PER_KIND - alerts.length)) {
      alerts.push({ kind: 'ip_throttled', subject: status.address, detail: `${t.destination} (${t.reason}) until ${new Date(t.until).toISOString()}: ${t.lastReply.slice(0, 200)}` });
    }
    if (status.warmup.status === 'warm') continue;
    warmup.push({
      pool: pools.get(status.address) ?? DEFAULT_POOL, ip: status.address, day: status.warmup.day,
      cap: status.warmup.todayCap, sent_today: status.usage.total, status: status.warmup.status,
    });
  }
  return { alerts, warmup };
}

/** address → the first of the account's named pools holding it. */
async function poolsOf(db: Queryable, accountId: string): Promise<Map<string, string>> {
  const rows: Array<{ name: string; address: string }> = await db('ip_pools as p').join('ip_pool_members as m', 'm.pool_id', 'p.id')
    .where('p.account_id', accountId).select('p.name', 'm.address').orderBy('p.name');
  const out = new Map<string, string>();
  for (const r of rows) if (!out.has(r.address)) out.set(r.address, r.name);
  return out;
}
