/** The CLI and the process lifecycle, run as real child processes. */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import http from 'node:http';
import { runCli, runCliAsync, startServer } from '../support/cli';
import { eventually } from '../support/wait';
import { KEY_CACHE_TTL_MS } from '../../src/auth/keys';
import { tempDir } from '../support/temp-dir';

function tempConfig(extra: object = {}): { file: string; dir: string } {
  const dir = tempDir('cli');
  const file = path.join(dir, 'config.json');
  fs.writeFileSync(file, JSON.stringify({ dataDir: path.join(dir, 'data'), http: { port: 0 }, smtp: { submission: { port: 0 }, inbound: { port: 0 } }, metrics: { port: 0 }, ...extra }));
  return { file, dir };
}

describe('configuration errors stop the start with exit code 2', () => {
  const cases: Array<[string, unknown, RegExp]> = [
    ['a wrong type', { http: { port: 'eighty' } }, /http\.port: .*expected number/],
    ['an unknown key', { htpp: { port: 1 } }, /htpp: unknown setting/],
    ['an unknown nested key', { delivery: { prot: 25 } }, /delivery\.prot: unknown setting/],
    ['an out-of-range value', { http: { port: 70000 } }, /http\.port: .*65535/],
    ['invalid JSON', '{ "http": ', /not valid JSON/],
  ];
  for (const [name, content, message] of cases) {
    test(name, () => {
      const { file } = tempConfig();
      fs.writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
      const res = runCli(['serve', '--config', file]);
      assert.equal(res.code, 2, res.stderr);
      assert.match(res.stderr, message);
    });
  }

  test('PIGEON_CONFIG works like --config', () => {
    const { file } = tempConfig();
    fs.writeFileSync(file, JSON.stringify({ http: { port: -1 } }));
    const res = runCli(['config', 'check'], { PIGEON_CONFIG: file });
    assert.equal(res.code, 2);
    assert.match(res.stderr, /http\.port/);
  });

  test('a missing config file is exit 2 naming the file', () => {
    const res = runCli(['serve', '--config', '/nonexistent/pigeon.json']);
    assert.equal(res.code, 2);
    assert.match(res.stderr, /\/nonexistent\/pigeon\.json/);
  });
});

describe('keys from the CLI', () => {
  test('keys create prints only the key; it works against a running server; list and revoke', async () => {
    const { file } = tempConfig();
    const server = await startServer(file, true);
    try {
      const created = await runCliAsync(['keys', 'create', '--mode', 'live', '--scopes', 'messages:read', '--config', file]);
      assert.equal(created.code, 0, created.stderr);
      const key = created.stdout.trim();
      assert.match(key, /^svc_live_[A-Za-z0-9]{40}$/);
      const ok = await fetch(`${server.url}/v1/messages`, { headers: { authorization: `Bearer ${key}` } });
      assert.notEqual(ok.status, 401);
      assert.notEqual(ok.status, 403);
      const denied = await fetch(`${server.url}/v1/account`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(denied.status, 403);

      const listed = await runCliAsync(['keys', 'list', '--json', '--config', file]);
      const keys = JSON.parse(listed.stdout) as Array<{ id: string; prefix: string; mode: string }>;
      const mine = keys.find((k) => key.startsWith(k.prefix) && k.mode === 'live');
      assert.ok(mine);
      assert.ok(!listed.stdout.includes(key), 'list never shows a secret');
      assert.equal((await runCliAsync(['keys', 'revoke', mine.id, '--config', file])).code, 0);
      // revoked by another process: the server's key cache trusts its copy for up to KEY_CACHE_TTL_MS
      const refused = async () => (await fetch(`${server.url}/v1/messages`, { headers: { authorization: `Bearer ${key}` } })).status === 401;
      const took = await eventually(refused, 10_000, 'the revoked key is refused');
      assert.ok(took < KEY_CACHE_TTL_MS + 2_000, `refused after ${Math.round(took)} ms`);
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });

  test('accounts create, then a key for that account; bad usage is exit 2', () => {
    const { file } = tempConfig();
    assert.equal(runCli(['accounts', 'create', 'shop', '--config', file]).code, 0);
    const res = runCli(['keys', 'create', '--mode', 'test', '--account', 'shop', '--scopes', 'all', '--json', '--config', file]);
    assert.equal(res.code, 0, res.stderr);
    assert.equal(JSON.parse(res.stdout).scopes.length, 9);
    assert.equal(runCli(['keys', 'create', '--mode', 'prod', '--config', file]).code, 2);
    assert.equal(runCli(['keys', 'create', '--mode', 'test', '--scopes', 'root', '--config', file]).code, 2);
    assert.equal(runCli(['keys', 'create', '--mode', 'test', '--account', 'nobody', '--config', file]).code, 2);
  });
});

describe('process lifecycle', () => {
  test('first start prints the sandbox key once; SIGTERM stops cleanly with exit 0', async () => {
    const { file } = tempConfig();
    const first = await startServer(file, true);
    const key = first.bootstrapKey as string;
    const res = await fetch(`${first.url}/v1/account`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(res.status, 200);
    assert.equal(await first.stop('SIGTERM'), 0);
    assert.ok(!first.stdout().includes(key), 'the key is not in the JSON log');

    const second = await startServer(file);
    assert.ok(!/svc_test_/.test(second.stderr()), 'no key printed on later starts');
    assert.equal(await second.stop('SIGINT'), 0);
  });

  test('a request in flight at SIGTERM is answered before the process exits', async () => {
    const { file } = tempConfig();
    const server = await startServer(file, true);
    // Key management needs a live key; the operator makes one with the CLI.
    const key = runCli(['keys', 'create', '--mode', 'live', '--scopes', 'account:manage,account:read', '--config', file]).stdout.trim();
    // A slow request: headers and half the body first, SIGTERM, then the rest of the body.
    const body = JSON.stringify({ name: 'late', mode: 'test', scopes: ['account:read'] });
    const { hostname, port } = new URL(server.url);
    const req = http.request({ hostname, port, method: 'POST', path: '/v1/api-keys', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } });
    const response = new Promise<http.IncomingMessage>((resolve, reject) => req.on('response', resolve).on('error', reject));
    req.write(body.slice(0, 10));
    await new Promise((r) => setTimeout(r, 200));
    const exit = server.stop('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    req.end(body.slice(10));
    const res = { status: (await response).statusCode };
    assert.equal(res.status, 201);
    assert.equal(await exit, 0);
  });
});
