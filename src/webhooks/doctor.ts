/**
 * `pigeon doctor` checks for webhooks: settings that are fine in development
 * but dangerous in production, the extra CA file, and the delivery backlog.
 */
import fs from 'node:fs';
import { systemClock } from '../clock';
import type { Config } from '../config';
import { openDatabase } from '../db';
import type { CheckResult } from '../cli/doctor';
import { pendingStats } from './deliveries';

export async function checkWebhooks(config: Config): Promise<CheckResult[]> {
  const { allowPrivateTargets, allowHttp, tlsCaFile } = config.webhooks;
  const results: CheckResult[] = [];
  if (allowPrivateTargets) {
    results.push({ name: 'webhooks', status: 'warn', detail: 'webhooks.allowPrivateTargets is on: API users can make this host call internal addresses; turn it off in production' });
  }
  if (allowHttp) results.push({ name: 'webhooks', status: 'warn', detail: 'webhooks.allowHttp is on: events can travel unencrypted; turn it off in production' });
  if (tlsCaFile) {
    const pem = fs.existsSync(tlsCaFile) ? fs.readFileSync(tlsCaFile, 'utf8') : '';
    results.push(pem.includes('-----BEGIN CERTIFICATE-----')
      ? { name: 'webhooks CA', status: 'ok', detail: `${tlsCaFile} holds a certificate` }
      : { name: 'webhooks CA', status: 'fail', detail: `webhooks.tlsCaFile ${tlsCaFile} is missing or holds no PEM certificate` });
  }
  const db = openDatabase(config);
  try {
    const { pending, oldestCreatedAt } = await pendingStats(db);
    const failed = Number((await db('webhook_deliveries').where({ status: 'failed' }).count({ n: '*' }).first())?.n ?? 0);
    const ageHours = oldestCreatedAt === null ? 0 : (systemClock.now() - oldestCreatedAt) / 3_600_000;
    const detail = `${pending} pending, ${failed} failed deliveries` + (pending ? `; oldest pending ${ageHours.toFixed(1)} h` : '');
    results.push({ name: 'webhook deliveries', status: failed || ageHours > 1 ? 'warn' : 'ok', detail: failed ? `${detail} (see GET /v1/webhooks/{id}/deliveries?status=failed)` : detail });
  } catch {
    // The database check reports an unreachable database.
  } finally {
    await db.destroy();
  }
  if (!allowPrivateTargets && !allowHttp) results.unshift({ name: 'webhooks', status: 'ok', detail: 'HTTPS only, internal addresses refused' });
  return results;
}
