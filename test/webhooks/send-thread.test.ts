// The webhook sender thread (src/webhooks/send-thread.ts): attempts made there arrive signed over kept-alive
// connections, an abort reaches a request on the thread, and what a failed thread held is made on the main thread.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Worker } from 'node:worker_threads';
import { parseConfig } from '../../src/config';
import { SenderThread } from '../../src/webhooks/send-thread';
import { startWebhookReceiver } from '../support/webhook-receiver';
import { verifyIndependently } from './helpers';

const SECRET = 'whsec_thread_test_secret_0123456789';
const config = parseConfig({ webhooks: { allowPrivateTargets: true, allowHttp: true, timeoutMs: 5_000 } });
const agents = { maxSockets: 4, maxFreeSockets: 2, maxAgents: 8 };

function sender(onThreadFailure?: (reason: string, orphans: number) => void, webhooks = config.webhooks): SenderThread {
  return new SenderThread({ config: { dns: config.dns, webhooks }, agents }, { onThreadFailure });
}

const input = (url: string, n: number, signal?: AbortSignal) => ({
  url, secrets: [SECRET], eventId: `evt_${n}`, body: JSON.stringify({ id: `evt_${n}`, n }), attempt: 1, now: Date.now(), signal,
});

const threadOf = (s: SenderThread): Worker | undefined => (s as unknown as { worker?: Worker }).worker;

test('attempts made on the thread arrive signed, one after another over one kept-alive connection', async () => {
  const receiver = await startWebhookReceiver();
  const s = sender();
  try {
    for (let n = 0; n < 5; n++) {
      const outcome = await s.attempt('hook', input(receiver.url, n));
      assert.equal(outcome.success, true, outcome.error ?? '');
    }
    assert.ok(threadOf(s), 'made on the thread');
    assert.equal(receiver.requests.length, 5);
    for (const [n, request] of receiver.requests.entries()) {
      assert.equal(request.headers['service-event-id'], `evt_${n}`);
      assert.equal(verifyIndependently(request.headers['service-signature'] as string, request.body, SECRET).valid, true);
    }
    assert.equal(receiver.connections(), 1);
  } finally {
    await s.destroy();
    await receiver.close();
  }
});

test('an abort stops a request the thread is making, and it answers as aborted', async () => {
  const receiver = await startWebhookReceiver({ respond: () => new Promise(() => undefined) }); // never answers
  const s = sender();
  try {
    const controller = new AbortController();
    const outcome = s.attempt('hook', input(receiver.url, 1, controller.signal));
    await receiver.waitFor(1, 5_000);
    controller.abort();
    assert.equal((await outcome).aborted, true);
  } finally {
    await s.destroy();
    await receiver.close();
  }
});

test('what a thread that ends held is attempted on the main thread, and the failure is told', async () => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const receiver = await startWebhookReceiver({ respond: async (_req, n) => (n === 1 ? gate.then(() => undefined) : undefined) });
  const failures: Array<{ reason: string; orphans: number }> = [];
  const s = sender((reason, orphans) => failures.push({ reason, orphans }));
  try {
    const now = Math.floor(Date.now() / 1000) * 1000 + 100;
    const outcome = s.attempt('hook', { ...input(receiver.url, 1), now });
    await receiver.waitFor(1, 5_000); // the thread's request is in
    await new Promise((r) => setTimeout(r, 1_100));
    await threadOf(s)!.terminate();
    release();
    const made = await outcome;
    assert.equal(made.success, true, 'made again here');
    assert.ok((made.waitedMs ?? 0) >= 1_000, `waited ${made.waitedMs} ms`);
    assert.equal(failures.length, 1);
    assert.equal(failures[0].orphans, 1);
    assert.equal(receiver.requests.length, 2, 'at least once: the receiver saw it twice');
    const t = verifyIndependently(receiver.requests[1].headers['service-signature'] as string, receiver.requests[1].body, SECRET).t;
    assert.ok(t >= Math.floor(now / 1000) + 1, 'signed with the time it was made again');
  } finally {
    await s.destroy();
    await receiver.close();
  }
});

test('a request that waits for its turn on the thread is signed with the time it starts, and tells its wait', async () => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const receiver = await startWebhookReceiver({ respond: async (_req, n) => (n === 1 ? gate.then(() => undefined) : undefined) });
  const s = sender(undefined, { ...config.webhooks, perWebhookConcurrency: 1 });
  try {
    const now = Math.floor(Date.now() / 1000) * 1000 + 100; // early in a second: its whole second is certain
    const first = s.attempt('hook', { ...input(receiver.url, 1), now });
    const second = s.attempt('hook', { ...input(receiver.url, 2), now });
    await receiver.waitFor(1, 5_000);
    await new Promise((r) => setTimeout(r, 1_100)); // the second waits behind the first, one request a webhook
    assert.equal(receiver.requests.length, 1, 'one at a time to one webhook');
    release();
    assert.equal((await first).success, true);
    const waited = await second;
    assert.ok((waited.waitedMs ?? 0) >= 1_000, `waited ${waited.waitedMs} ms`);
    const t = (n: number) => verifyIndependently(receiver.requests[n].headers['service-signature'] as string, receiver.requests[n].body, SECRET).t;
    assert.ok(t(1) >= Math.floor(now / 1000) + 1, 'signed when it started, not when it was asked');
    assert.equal(t(0), Math.floor(now / 1000));
  } finally {
    await s.destroy();
    await receiver.close();
  }
});

test('after a failure, new attempts wait for those made on the main thread, then go to a new thread', async () => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  // the thread's first request and its re-run here both hang until released
  const receiver = await startWebhookReceiver({ respond: async (_req, n) => (n <= 2 ? gate.then(() => undefined) : undefined) });
  const s = sender();
  try {
    const first = s.attempt('hook', input(receiver.url, 1));
    await receiver.waitFor(1, 5_000);
    await threadOf(s)!.terminate();
    await receiver.waitFor(2, 5_000); // made again on the main thread, still hanging
    assert.equal(threadOf(s), undefined);
    await new Promise((r) => setTimeout(r, 1_100)); // the failed thread's rest is over
    const later = s.attempt('hook', input(receiver.url, 3));
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(receiver.requests.length, 2, 'not sent while the main thread still has one out');
    release();
    assert.equal((await first).success, true);
    assert.equal((await later).success, true);
    assert.ok(threadOf(s), 'a new thread made it');
    assert.equal(receiver.requests.length, 3);
  } finally {
    release();
    await s.destroy();
    await receiver.close();
  }
});
