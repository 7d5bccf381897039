// kill -9 with webhook deliveries in flight and waiting: the next start sends every one of them.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startWebhookReceiver } from '../support/webhook-receiver';
import { ApiClient } from '../support/app';
import { eventually } from '../support/wait';

const CLI = path.resolve(__dirname, '../../src/cli.js');

interface Served {
  child: ChildProcess;
  url: string;
  stderr: () => string;
}

/** Starts `pigeon serve` and resolves once its log says where it listens (and, first time, the key is printed). */
function serve(configFile: string, firstStart: boolean): Promise<Served> {
  const child = spawn(process.execPath, [CLI, 'serve', '--config', configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start within 10 s:\n${out}\n${err}`)), 10_000);
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}:\n${out}\n${err}`)));
    const check = () => {
      const started = out.split('\n').slice(0, -1).filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)).find((l) => l.msg === 'pigeon started');
      if (!started || (firstStart && !/svc_test_\w+/.test(err))) return;
      clearTimeout(timer);
      resolve({ child, url: `http://${started.http}`, stderr: () => err });
    };
    child.stdout!.on('data', (chunk) => {
      out += chunk;
      check();
    });
    child.stderr!.on('data', (chunk) => {
      err += chunk;
      check();
    });
  });
}

function killed(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill(signal);
  });
}

describe('webhook deliveries across a crash', () => {
  it('sends the deliveries that were in flight or waiting at kill -9 after the restart', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-crash-'));
    const configFile = path.join(dir, 'config.json');
    fs.writeFileSync(configFile, JSON.stringify({
      dataDir: path.join(dir, 'data'),
      log: { level: 'info' },
      http: { port: 0 },
      smtp: { submission: { port: 0 }, inbound: { port: 0 } },
      // Long timeout: the hanging requests are still in flight when the process dies.
      webhooks: { allowPrivateTargets: true, allowHttp: true, timeoutMs: 60_000 },
      metrics: { port: 0 },
    }));
    let up = false;
    const receiver = await startWebhookReceiver({ respond: () => (up ? { status: 204 } : { hang: true }) });
    let first: Served | undefined;
    let second: Served | undefined;
    try {
      first = await serve(configFile, true);
      const key = /svc_test_[A-Za-z0-9]+/.exec(first.stderr())?.[0];
      assert.ok(key, 'the first start printed its sandbox key');
      const api = new ApiClient(first.url, key);
      const created = await api.post('/v1/webhooks', { url: receiver.url, events: ['message.queued'] });
      assert.equal(created.status, 201);

      const to = ['a', 'b', 'c', 'd', 'e'].map((n) => ({ email: `${n}@example.org` }));
      const sent = await api.post('/v1/messages/send', { from: 'orders@shop.example', to, subject: 'Order', text: 'Shipped.' });
      assert.equal(sent.status, 202, sent.text);
      const messageIds = (sent.body.data as Array<{ id: string }>).map((m) => m.id);
      await receiver.waitFor(2, 5000); // two in flight (per-webhook limit), three waiting
      await killed(first.child, 'SIGKILL');
      assert.equal(receiver.requests.length, 2);

      up = true;
      second = await serve(configFile, false);
      const all = await receiver.waitFor(7, 10_000);
      const answered = new Set(all.slice(2).map((r) => (r.json() as { data: { message_id: string } }).data.message_id));
      assert.deepEqual([...answered].sort(), [...messageIds].sort(), 'every event arrived after the restart');
      assert.equal(new Set(all.slice(2).map((r) => r.headers['service-event-id'])).size, 5);
      // A result is written after its answer arrived: the last requests' results may still be on their way.
      const statuses = async () => ((await new ApiClient(second!.url, key).get(`/v1/webhooks/${created.body.id}/deliveries`))
        .body.data as Array<{ status: string }>).map((d) => d.status);
      await eventually(async () => (await statuses()).every((s) => s === 'succeeded'), 5000, 'every result recorded');
      assert.deepEqual(await statuses(), Array(5).fill('succeeded'));
    } finally {
      if (first) await killed(first.child, 'SIGKILL');
      if (second) await killed(second.child, 'SIGTERM');
      await receiver.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
