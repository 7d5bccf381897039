/*
 * Shared pieces of the webhook tests: an app whose dispatcher trusts the test
 * certificate, events recorded the way the message pipeline records them (in a
 * transaction, then the webhooksChanged signal), and an independent signature
 * check that shares no code with the dispatcher.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { AppOptions, Worker } from '../../src/app';
import type { ConfigInput } from '../../src/config';
import { iso } from '../../src/clock';
import { newId } from '../../src/ids';
import { messageEventData, recordEvent, RecordedEvent } from '../../src/events/record';
import { mergeDeep } from '../support/merge';
import { ApiClient, liveApi, startTestApp, TestApp } from '../support/app';
import { testCertificate } from '../support/tls-cert';
import { tempDir } from '../support/temp-dir';

let caPath: string | undefined;

/** The test certificate as a CA file for `webhooks.tlsCaFile`. */
export function testCaFile(): string {
  if (!caPath) {
    caPath = path.join(tempDir('ca'), 'ca.pem');
    fs.writeFileSync(caPath, testCertificate().cert);
  }
  return caPath;
}

/**
 * An app whose `api` holds a live key with every scope: webhooks receive only the events of the mode of the
 * key that created them, and these tests record live events unless they say otherwise. `sandboxApi` gives the
 * bootstrap sandbox key back, for tests of the sandbox.
 */
export async function startWebhookApp(overrides: ConfigInput = {}, options: AppOptions = {}): Promise<TestApp> {
  const app = await startTestApp(mergeDeep({ webhooks: { tlsCaFile: testCaFile() } }, overrides) as ConfigInput, options);
  return Object.assign(app, { api: await liveApi(app) });
}

export const sandboxApi = (app: TestApp): ApiClient => app.api.withKey(app.key);

export async function accountIdOf(app: TestApp): Promise<string> {
  return (await app.api.get('/v1/account')).body.id as string;
}

export interface EventSpec {
  type: string;
  fields?: Record<string, unknown>;
  mode?: 'test' | 'live';
  tags?: string[];
  metadata?: Record<string, string>;
}

/** Records an event as a pipeline stage does: in its transaction, then the wake-up after commit. */
export async function recordMessageEvent(app: TestApp, spec: EventSpec): Promise<RecordedEvent> {
  const accountId = await accountIdOf(app);
  const at = app.deps.clock.now();
  const mode = spec.mode ?? 'live';
  const message = { id: newId('msg'), mode, toEmail: 'ada@example.org', fromEmail: 'billing@shop.example', tags: spec.tags ?? [], metadata: spec.metadata ?? {} };
  const timeField = `${spec.type.split('.')[1]}_at`;
  const data = messageEventData(message, { [timeField]: iso(at), ...spec.fields });
  const event = await app.db.transaction((trx) => recordEvent(trx, { accountId, mode, type: spec.type, messageId: message.id, data, at }));
  app.deps.signals.emit('webhooksChanged');
  return event;
}

/** Creates a webhook with the app's live key, or with `client` (e.g. sandboxApi(app) for a sandbox webhook). */
export async function createWebhook(app: TestApp, body: Record<string, unknown>, client: ApiClient = app.api): Promise<{ id: string; secret: string }> {
  const res = await client.post('/v1/webhooks', body);
  if (res.status !== 201) throw new Error(`webhook creation failed: ${res.status} ${res.text}`);
  return res.body;
}

/** Parses Service-Signature and checks it with node:crypto directly (not the dispatcher's code). */
export function verifyIndependently(header: string | undefined, body: Buffer, secret: string): { t: number; valid: boolean; v1: string[] } {
  const parts = (header ?? '').split(',').map((p) => p.split('='));
  const t = Number(parts.find(([k]) => k === 't')?.[1]);
  const v1 = parts.filter(([k]) => k === 'v1').map(([, v]) => v);
  const mac = crypto.createHmac('sha256', secret);
  mac.update(Buffer.from(`${t}.`));
  mac.update(body);
  const expected = mac.digest('hex');
  return { t, v1, valid: v1.includes(expected) };
}

/** The webhook dispatcher of an app (other modules add workers too). */
export function dispatcher(app: TestApp): Worker {
  const worker = app.workers.find((w) => w.name === 'webhooks');
  if (!worker?.runOnce) throw new Error('no webhooks worker');
  return worker;
}

/** Sends everything due at the fake clock's now and waits for it. */
export const dispatch = (app: TestApp): Promise<void> => dispatcher(app).runOnce!();

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
