/**
 * The appliance under the delivery benchmark, in a child process of its own
 * so the load generator and the sink do not share its event loop or its RSS.
 * Everything runs, MTA included. Config overrides come as JSON in argv[2];
 * it reports `ready` (URL and the bootstrap key) and answers `stats` with its
 * peak RSS and CPU time.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createApp } from '../src/app';

export interface DeliveryServerReady {
  type: 'ready';
  url: string;
  key: string;
}

async function main(): Promise<void> {
  const overrides = JSON.parse(process.argv[2] ?? '{}') as Record<string, unknown>;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-bench-delivery-'));
  const app = await createApp({
    ...overrides,
    dataDir,
    log: { level: 'warn' },
    http: { port: 0 },
    smtp: { submission: { port: 0 }, inbound: { port: 0 } },
    rateLimit: { requestsPerSecond: 1e6, burst: 1e6 },
  });
  process.on('message', async (msg: { type: string }) => {
    if (msg.type === 'stats') {
      const cpu = process.cpuUsage();
      process.send?.({ type: 'stats', maxRssKb: process.resourceUsage().maxRSS, cpuMs: (cpu.user + cpu.system) / 1000 });
    }
    if (msg.type === 'stop') {
      await app.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
      process.exit(0);
    }
  });
  process.send?.({ type: 'ready', url: app.http.url, key: app.bootstrapKey ?? '' } satisfies DeliveryServerReady);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
