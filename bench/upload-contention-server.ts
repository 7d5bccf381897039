/**
 * The app of the upload-contention benchmark, in a child process: Pigeon on a
 * temporary database with the background workers stopped, account A (the
 * default account) with a live key for the upload, and account B with a live
 * key for the requests whose latency is measured. Tells the parent over IPC.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { createApp } from '../src/app';
import { createAccount } from '../src/auth/accounts';
import { createKey } from '../src/auth/keys';
import { SCOPES } from '../src/auth/scopes';
import { answerBenchParent } from './child';

export interface ContentionReady {
  type: 'ready';
  url: string;
  uploaderKey: string;
  otherKey: string;
}

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-bench-'));
  const app = await createApp({
    dataDir, log: { level: 'warn' }, http: { port: 0 }, smtp: { submission: { port: 0 }, inbound: { port: 0 } }, metrics: { port: 0 },
    rateLimit: { requestsPerSecond: 1e6, burst: 1e6 }, suppressions: { uploadMaxBytes: 512 * 2 ** 20 },
  }, { logStream: new Writable({ write: (_c, _e, cb) => cb() }) });
  await Promise.all(app.workers.map((w) => w.stop()));
  const now = Date.now();
  const a = await app.db('accounts').first('id');
  const b = await createAccount(app.db, 'bench-other', now);
  const key = async (accountId: string) => (await createKey(app.db, { accountId, name: 'bench', mode: 'live', scopes: [...SCOPES] }, now)).secret;
  answerBenchParent(app, () => fs.rmSync(dataDir, { recursive: true, force: true }));
  process.send?.({ type: 'ready', url: app.http.url, uploaderKey: await key(a.id), otherKey: await key(b.id) } satisfies ContentionReady);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
