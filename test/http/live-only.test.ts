// A sandbox key never changes what live mail does: key management, the allowlist, domain removal and
// DKIM rotation, and suppression writes need a live key; an operator can always clear a locking allowlist.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { FakeClock, type Clock } from '../../src/clock';
import { liveApi, startTestApp, type ApiResponse } from '../support/app';
import { runCli } from '../support/cli';
import { eventually } from '../support/wait';
import { ALLOWLIST_CACHE_TTL_MS } from '../../src/auth/settings';

function assertLiveKeyRequired(res: ApiResponse): void {
  assert.equal(res.status, 403, res.text);
  assert.equal(res.body.error.type, 'permission_error');
  assert.equal(res.body.error.code, 'live_key_required');
}

/** A config file for the CLI that points at the test app's database. */
function cliConfig(dataDir: string): string {
  const file = path.join(dataDir, 'cli-config.json');
  fs.writeFileSync(file, JSON.stringify({ dataDir }));
  return file;
}

describe('sandbox keys against live resources', () => {
  it('a sandbox key cannot revoke a live key', async () => {
    const app = await startTestApp();
    try {
      const live = await liveApi(app, ['account:manage', 'account:read']);
      const liveKeyId = (await live.get('/v1/account')).body.key.id;
      assertLiveKeyRequired(await app.api.delete(`/v1/api-keys/${liveKeyId}`));
      assertLiveKeyRequired(await app.api.get('/v1/api-keys'));
      assertLiveKeyRequired(await app.api.post('/v1/api-keys', { name: 'x', mode: 'test', scopes: ['account:read'] }));
      assert.equal((await live.get('/v1/account')).status, 200, 'the live key still works');
      assert.equal((await app.db('api_keys').where({ id: liveKeyId }).first()).revoked_at, null);
    } finally {
      await app.stop();
    }
  });

  it('a sandbox key cannot set an allowlist that locks the live key out', async () => {
    const app = await startTestApp();
    try {
      const live = await liveApi(app, ['account:manage', 'account:read']);
      assertLiveKeyRequired(await app.api.put('/v1/settings/security', { allowed_ips: ['203.0.113.0/24'] }));
      assert.equal((await live.get('/v1/account')).status, 200);
      assert.deepEqual((await live.get('/v1/settings/security')).body.allowed_ips, []);
      assert.equal((await app.api.get('/v1/settings/security')).status, 200, 'reading the settings stays open to sandbox keys');
    } finally {
      await app.stop();
    }
  });

  it('pigeon settings reset-allowlist unlocks an account whose allowlist locked every key out', async () => {
    const clock = new FakeClock(Date.now());
    const app = await startTestApp({}, { clock: clock as Clock });
    try {
      const live = await liveApi(app, ['account:manage', 'account:read']);
      assert.equal((await live.put('/v1/settings/security', { allowed_ips: ['203.0.113.0/24'] })).status, 200);
      const locked = await live.get('/v1/account');
      assert.equal(locked.body.error.code, 'ip_not_allowed');

      const res = runCli(['settings', 'reset-allowlist', '--account', 'default', '--config', cliConfig(app.dataDir)]);
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, /cleared the IP allowlist of 'default' \(1 entry removed\)/);
      // another process changed it: the running server's allowlist cache trusts its copy for up to 2 s of real time
      const took = await eventually(async () => (await live.get('/v1/account')).status === 200, 10_000, 'the cleared allowlist applies');
      assert.ok(took < ALLOWLIST_CACHE_TTL_MS + 2_000, `applied after ${Math.round(took)} ms`);
      assert.equal(runCli(['settings', 'reset-allowlist', '--account', 'nobody', '--config', cliConfig(app.dataDir)]).code, 2);
    } finally {
      await app.stop();
    }
  });

  it('a sandbox key cannot delete a domain or rotate its DKIM key', async () => {
    const app = await startTestApp();
    try {
      const added = await app.api.post('/v1/domains', { name: 'shop.test', dkim_algorithm: 'ed25519' });
      assert.equal(added.status, 201, 'adding a domain stays open to sandbox keys');
      assertLiveKeyRequired(await app.api.delete('/v1/domains/shop.test'));
      assertLiveKeyRequired(await app.api.post('/v1/domains/shop.test/dkim/rotate'));
      const after = await app.api.get('/v1/domains/shop.test');
      assert.equal(after.status, 200);
      assert.equal(after.body.dns_records.filter((r: { purpose: string }) => r.purpose === 'dkim').length, 1, 'no pending key was added');
      const live = await liveApi(app, ['domains:manage']);
      assert.equal((await live.post('/v1/domains/shop.test/dkim/rotate')).status, 200);
      assert.equal((await live.delete('/v1/domains/shop.test')).status, 200);
    } finally {
      await app.stop();
    }
  });

  it('a sandbox key cannot add an address to the suppression list or remove one', async () => {
    const app = await startTestApp();
    try {
      const live = await liveApi(app, ['suppressions:manage']);
      assert.equal((await live.post('/v1/suppressions', { suppressions: [{ email: 'kept@example.com' }] })).status, 200);
      assertLiveKeyRequired(await app.api.post('/v1/suppressions', { suppressions: [{ email: 'victim@example.com' }] }));
      assertLiveKeyRequired(await app.api.delete('/v1/suppressions/kept@example.com'));
      const list = await app.api.get('/v1/suppressions');
      assert.deepEqual(list.body.data.map((s: { email: string }) => s.email), ['kept@example.com'], 'reading stays open; nothing changed');
    } finally {
      await app.stop();
    }
  });
});
