// Rows written by another process (nobody signals this one) are sent within webhooks.pollIntervalMs.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { startWebhookReceiver } from '../support/webhook-receiver';
import { createWebhook, startWebhookApp } from './helpers';

const RECORD_EVENTS = path.resolve(__dirname, 'fixtures/record-events.js');

describe('webhook dispatcher poll', () => {
  it('sends events another process recorded, at its next look', async () => {
    const app = await startWebhookApp({ webhooks: { pollIntervalMs: 300 } });
    const receiver = await startWebhookReceiver();
    const configFile = path.join(app.dataDir, 'writer.json');
    try {
      await createWebhook(app, { url: receiver.url, events: ['message.delivered'] });
      fs.writeFileSync(configFile, JSON.stringify({ dataDir: app.dataDir, database: app.config.database })); // the app's database, SQLite or PostgreSQL
      const { stdout } = await promisify(execFile)(process.execPath, [RECORD_EVENTS, configFile, '3']);
      const eventIds = JSON.parse(stdout) as string[];
      const got = await receiver.waitFor(3, 5000);
      assert.deepEqual(got.map((r) => r.headers['service-event-id']).sort(), eventIds.sort());
    } finally {
      await receiver.close();
      await app.stop();
    }
  });
});
