/** `pigeon users create|list|delete` as a real child process, against a running app's database. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { CLI } from '../support/cli';
import { startTestApp, TestApp, ApiClient } from '../support/app';
import { ConsoleClient } from '../support/console';

/** Runs the CLI without blocking the loop the app serves on, with `input` piped to stdin (or stdin closed empty). */
function pigeon(args: string[], input = ''): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { timeout: 30_000 });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  child.stdin.end(input);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('pigeon users', () => {
  let app: TestApp;
  let config: string;
  before(async () => {
    app = await startTestApp();
    config = path.join(app.dataDir, 'cli-config.json');
    fs.writeFileSync(config, JSON.stringify({ dataDir: app.dataDir, http: { publicUrl: 'https://pigeon.example.net' } }));
  });
  after(() => app.stop());

  test('create with a piped password makes a user who can sign in', async () => {
    const res = await pigeon(['users', 'create', '--config', config, '--email', 'Ops@Example.com', '--role', 'admin'], 'a long enough password\n');
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /created admin ops@example.com \(usr_/);
    assert.doesNotMatch(res.stdout, /set-password/);
    const client = new ConsoleClient(app.http.url);
    assert.equal((await client.signIn('ops@example.com', 'a long enough password')).status, 200);
  });

  test('create without a password prints a one-time link that sets it', async () => {
    const res = await pigeon(['users', 'create', '--config', config, '--email', 'dev@example.com', '--role', 'member', '--account', 'default']);
    assert.equal(res.code, 0, res.stderr);
    const link = /https:\/\/pigeon\.example\.net\/#\/set-password\/([A-Za-z0-9_-]{43})/.exec(res.stdout);
    assert.ok(link, res.stdout);
    const set = await new ApiClient(app.http.url, '').post('/v1/session/password', { token: link[1], password: 'twelve chars ok' });
    assert.equal(set.status, 204, set.text);
    const client = new ConsoleClient(app.http.url);
    const signIn = await client.signIn('dev@example.com', 'twelve chars ok');
    assert.equal(signIn.status, 200);
    assert.equal(signIn.body.user.account, 'default');
  });

  test('refuses a short password, a member without account, a taken email; list and delete', async () => {
    const short = await pigeon(['users', 'create', '--config', config, '--email', 's@example.com', '--role', 'admin'], 'short\n');
    assert.equal(short.code, 2);
    assert.match(short.stderr, /at least 12 characters/);
    const orphan = await pigeon(['users', 'create', '--config', config, '--email', 'o@example.com', '--role', 'member']);
    assert.equal(orphan.code, 2);
    assert.match(orphan.stderr, /member belongs to one account/);
    const taken = await pigeon(['users', 'create', '--config', config, '--email', 'OPS@example.com', '--role', 'admin']);
    assert.equal(taken.code, 2);
    assert.match(taken.stderr, /already exists/);

    const list = await pigeon(['users', 'list', '--config', config, '--json']);
    const emails = (JSON.parse(list.stdout) as Array<{ email: string }>).map((u) => u.email).sort();
    assert.deepEqual(emails, ['dev@example.com', 'ops@example.com']);
    assert.equal((await pigeon(['users', 'delete', '--config', config, '--email', 'dev@example.com'])).code, 0);
    assert.equal((await new ConsoleClient(app.http.url).signIn('dev@example.com', 'twelve chars ok')).status, 401);
  });
});
