// The webhook receiver records raw requests and answers as scripted, over HTTP and HTTPS.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import { startWebhookReceiver, type ReceiverOptions, type WebhookReceiver } from './webhook-receiver';

async function withReceiver(opts: ReceiverOptions, body: (receiver: WebhookReceiver) => Promise<void>): Promise<void> {
  const receiver = await startWebhookReceiver(opts);
  try {
    await body(receiver);
  } finally {
    await receiver.close();
  }
}

const post = (url: string, body: string, init: RequestInit = {}) =>
  fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', 'service-signature': 't=1,v1=ab' }, ...init });

describe('webhook receiver', () => {
  it('records method, path, headers and the raw body', async () => {
    await withReceiver({}, async (receiver) => {
      const body = '{"type":"message.delivered",  "data":{}}';
      const res = await post(`${receiver.url}?x=1`, body);
      assert.equal(res.status, 200);
      const [request] = await receiver.waitFor(1);
      assert.equal(request.method, 'POST');
      assert.equal(request.path, '/webhook?x=1');
      assert.equal(request.headers['service-signature'], 't=1,v1=ab');
      assert.equal(request.body.toString(), body); // byte for byte, whitespace included
      assert.deepEqual(request.json(), { type: 'message.delivered', data: {} });
    });
  });

  it('answers 500 to the first request and 200 with a JSON body to the next', async () => {
    await withReceiver({ respond: (_req, n) => (n === 1 ? { status: 500, body: 'boom' } : { body: { ok: true } }) }, async (receiver) => {
      const first = await post(receiver.url, '{}');
      assert.equal(first.status, 500);
      assert.equal(await first.text(), 'boom');
      const second = await post(receiver.url, '{}');
      assert.equal(second.status, 200);
      assert.deepEqual(await second.json(), { ok: true });
    });
  });

  it('answers late with delayMs', async () => {
    await withReceiver({ respond: () => ({ status: 204, delayMs: 200 }) }, async (receiver) => {
      const started = Date.now();
      const res = await post(receiver.url, '{}');
      assert.equal(res.status, 204);
      assert.ok(Date.now() - started >= 190);
    });
  });

  it('hangs until the client gives up, and still closes at once', async () => {
    await withReceiver({ respond: () => ({ hang: true }) }, async (receiver) => {
      await assert.rejects(post(receiver.url, '{}', { signal: AbortSignal.timeout(200) }), { name: 'TimeoutError' });
      assert.equal(receiver.requests.length, 1);
    });
  });

  it('redirects with redirectTo', async () => {
    await withReceiver({ respond: () => ({ redirectTo: 'http://127.0.0.1:1/elsewhere' }) }, async (receiver) => {
      const res = await post(receiver.url, '{}', { redirect: 'manual' });
      assert.equal(res.status, 302);
      assert.equal(res.headers.get('location'), 'http://127.0.0.1:1/elsewhere');
    });
  });

  it('serves HTTPS with a certificate a client can trust', async () => {
    await withReceiver({ https: true }, async (receiver) => {
      assert.match(receiver.url, /^https:\/\/127\.0\.0\.1:\d+\/webhook$/);
      const status = await new Promise<number | undefined>((resolve, reject) => {
        const req = https.request(receiver.url, { method: 'POST', ca: receiver.ca }, (res) => {
          res.resume();
          resolve(res.statusCode);
        });
        req.on('error', reject);
        req.end('{"secure":true}');
      });
      assert.equal(status, 200);
      assert.deepEqual(receiver.requests[0].json(), { secure: true });
    });
  });

  it('waitFor rejects with a clear message when too few requests arrive', async () => {
    await withReceiver({}, async (receiver) => {
      await assert.rejects(receiver.waitFor(2, 50), /expected 2 request\(s\) within 50 ms, got 0/);
    });
  });
});
