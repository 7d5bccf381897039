// The verification helpers printed in docs/webhooks.md accept what the dispatcher really sends, and refuse tampering.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import vm from 'node:vm';
import { FakeClock } from '../../src/clock';
import type { TestApp } from '../support/app';
import { startWebhookReceiver, WebhookReceiver, WebhookRequest } from '../support/webhook-receiver';
import { createWebhook, recordMessageEvent, startWebhookApp } from './helpers';

const DOC = fs.readFileSync(path.resolve(__dirname, '../../../docs/webhooks.md'), 'utf8');

function snippet(marker: string): string {
  const match = new RegExp(`<!-- verify:${marker} -->\\s*\`\`\`\\w+\\n([\\s\\S]*?)\`\`\``).exec(DOC);
  if (!match) throw new Error(`docs/webhooks.md has no ${marker} snippet`);
  return match[1];
}

type Verify = (body: Buffer | string, header: string, secret: string, tolerance?: number, now?: number) => boolean;

function nodeHelper(): Verify {
  const context = vm.createContext({ require, Buffer });
  vm.runInContext(`${snippet('node')}\nthis.verify = verifyPigeonSignature;`, context);
  return context.verify as Verify;
}

const hasPython = spawnSync('python3', ['--version']).status === 0;

/** Runs the Python helper on each case in one process; returns its answers. */
function pythonHelper(cases: Array<{ body: Buffer; header: string; secret: string; now: number }>): boolean[] {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pigeon-py-'));
  const file = path.join(dir, 'verify.py');
  fs.writeFileSync(file, `${snippet('python')}

import base64, json, sys
for case in json.load(sys.stdin):
    print(json.dumps(verify_pigeon_signature(base64.b64decode(case["body"]), case["header"], case["secret"], now_seconds=case["now"])))
`);
  try {
    const input = JSON.stringify(cases.map((c) => ({ ...c, body: c.body.toString('base64') })));
    return execFileSync('python3', [file], { input, encoding: 'utf8' }).trim().split('\n').map((l) => JSON.parse(l) as boolean);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe('documented signature helpers', () => {
  const clock = new FakeClock();
  const secret = 'whsec_docsTestSecret0123456789abcd';
  let app: TestApp;
  let receiver: WebhookReceiver;
  let sent: WebhookRequest;
  let now: number;

  before(async () => {
    app = await startWebhookApp({}, { clock });
    receiver = await startWebhookReceiver();
    await createWebhook(app, { url: receiver.url, events: ['message.clicked'], secret });
    await recordMessageEvent(app, {
      type: 'message.clicked', tags: ['ünïcode ✓'], metadata: { note: 'quotes " and \\ backslash' },
      fields: { url: 'https://shop.example/p?a=1&b=2', user_agent: 'Mozilla/5.0', unique: true },
    });
    [sent] = await receiver.waitFor(1);
    now = clock.now() / 1000;
  });
  after(async () => {
    await receiver.close();
    await app.stop();
  });

  const cases = () => {
    const header = sent.headers['service-signature'] as string;
    const tampered = Buffer.from(sent.body.toString('utf8').replace('"unique":true', '"unique":false'));
    return [
      { name: 'the request as sent', body: sent.body, header, secret, now, expected: true },
      { name: 'a changed body', body: tampered, header, secret, now, expected: false },
      { name: 'the wrong secret', body: sent.body, header, secret: 'whsec_someoneElse0123456789abcdef', now, expected: false },
      { name: 'a replay 6 minutes later', body: sent.body, header, secret, now: now + 360, expected: false },
      { name: 'a header without v1', body: sent.body, header: header.split(',')[0], secret, now, expected: false },
      // A forged header with non-ASCII digits or hex: the helper must answer false, not raise.
      { name: 'v1=é (non-ASCII signature)', body: sent.body, header: `${header.split(',')[0]},v1=é`, secret, now, expected: false },
      { name: 't=² (a superscript digit)', body: sent.body, header: `t=²,${header.split(',')[1]}`, secret, now, expected: false },
      { name: 't=٣ (an Arabic-Indic digit)', body: sent.body, header: `t=٣,${header.split(',')[1]}`, secret, now, expected: false },
      { name: 'v1 of 64 non-ASCII letters', body: sent.body, header: `${header.split(',')[0]},v1=${'é'.repeat(64)}`, secret, now, expected: false },
    ];
  };

  it('the Node.js helper verifies the dispatcher\'s requests', () => {
    const verify = nodeHelper();
    for (const c of cases()) assert.equal(verify(c.body, c.header, c.secret, 300, c.now), c.expected, c.name);
  });

  it('the Python helper verifies the dispatcher\'s requests', { skip: !hasPython && 'python3 is not installed' }, () => {
    const all = cases();
    assert.deepEqual(pythonHelper(all), all.map((c) => c.expected));
  });
});
