/**
 * The appliance under the delivery benchmark, in a child process of its own
 * so the load generator and the sink do not share its event loop or its RSS.
 * Everything runs, MTA included, unless argv[3] is 'accept-only' (then the
 * background workers are stopped and accepted mail stays queued; the thread
 * pools a send request itself uses keep running). Config overrides come
 * as JSON in argv[2] (a `dataDir` there is kept; otherwise a temporary one is
 * made and removed); it reports `ready` (URL and the first-start key) and
 * answers `stats` with its peak RSS and CPU time. With argv[4]
 * 'relay-loopback' a live send key is bound to the relay network
 * 127.0.0.1/32, so a client that cannot AUTH (smtp-source) can submit.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createApp } from '../src/app';
import { createKey } from '../src/auth/keys';
import { addRelayNetworks } from '../src/auth/relay-networks';
import { SCOPES } from '../src/auth/scopes';
import { isBackground } from '../src/modules';
import { answerBenchParent } from './child';

export interface DeliveryServerReady {
  type: 'ready';
  url: string;
  key: string;
  /** the SMTP submission port */
  smtpPort: number;
}

async function main(): Promise<void> {
  const overrides = JSON.parse(process.argv[2] ?? '{}') as Record<string, unknown>;
  const smtp = (overrides.smtp ?? {}) as { submission?: Record<string, unknown> };
  const ownDir = typeof overrides.dataDir !== 'string';
  const dataDir = ownDir ? fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-bench-delivery-')) : (overrides.dataDir as string);
  const app = await createApp({
    ...overrides,
    dataDir,
    log: { level: 'warn' },
    http: { port: 0 },
    smtp: { submission: { ...smtp.submission, port: 0 }, inbound: { port: 0 } },
    metrics: { port: 0 },
    rateLimit: { requestsPerSecond: 1e6, burst: 1e6 },
  });
  if (process.argv[3] === 'accept-only') await Promise.all(app.workers.filter(isBackground).map((w) => w.stop()));
  answerBenchParent(app, () => ownDir && fs.rmSync(dataDir, { recursive: true, force: true }));
  // A live key with every scope, as `pigeon keys create --mode live --scopes all` makes (a sandbox key cannot).
  const account = await app.db('accounts').where({ name: 'default' }).first('id');
  const { secret } = await createKey(app.db, { accountId: account.id, name: 'bench admin', mode: 'live', scopes: [...SCOPES] }, Date.now());
  if (process.argv[4] === 'relay-loopback') {
    const relay = await createKey(app.db, { accountId: account.id, name: 'bench relay', mode: 'live', scopes: ['messages:send'] }, Date.now());
    await addRelayNetworks(app.db, relay.key.id, account.id, ['127.0.0.1/32'], Date.now());
  }
  process.send?.({ type: 'ready', url: app.http.url, key: secret, smtpPort: app.listeners['smtp-submission'].port } satisfies DeliveryServerReady);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
