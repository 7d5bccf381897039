/**
 * The app under benchmark, run in a child process so the load generator does
 * not share its event loop. Starts Pigeon on a temporary database with the
 * config given as JSON in argv[2], stops the background workers (only the
 * accept path is measured), creates a live key and a verified domain, and
 * tells the parent over IPC. Answers `{type:'stats'}` with its peak RSS and CPU time.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createApp } from '../src/app';
import { createKey } from '../src/auth/keys';
import { SCOPES } from '../src/auth/scopes';
import { newId } from '../src/ids';
import { isBackground } from '../src/modules';
import { answerBenchParent } from './child';

export interface ServerReady {
  type: 'ready';
  url: string;
  key: string;
  /** the SMTP submission port */
  smtpPort: number;
  /** the Prometheus listener's /metrics URL */
  metricsUrl: string;
}

async function main(): Promise<void> {
  const overrides = JSON.parse(process.argv[2] ?? '{}') as Record<string, unknown>;
  const smtp = (overrides.smtp ?? {}) as { submission?: Record<string, unknown> };
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-bench-'));
  const app = await createApp(
    { ...overrides, dataDir, log: { level: 'warn' }, http: { port: 0 }, smtp: { submission: { ...smtp.submission, port: 0 }, inbound: { port: 0 } }, metrics: { port: 0 }, rateLimit: { requestsPerSecond: 1e6, burst: 1e6 } },
    {},
  );
  await Promise.all(app.workers.filter(isBackground).map((w) => w.stop()));
  const account = await app.db('accounts').first('id');
  const now = Date.now();
  await app.db('domains').insert({ id: newId('dom'), account_id: account.id, name: 'example.com', status: 'verified', created_at: now, verified_at: now });
  const { secret } = await createKey(app.db, { accountId: account.id, name: 'bench', mode: 'live', scopes: [...SCOPES] }, now);
  answerBenchParent(app, () => fs.rmSync(dataDir, { recursive: true, force: true }));
  process.send?.({ type: 'ready', url: app.http.url, key: secret, smtpPort: app.listeners['smtp-submission'].port, metricsUrl: app.metrics?.url ?? '' } satisfies ServerReady);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
