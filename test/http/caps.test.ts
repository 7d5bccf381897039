// Per-account caps: one tenant cannot grow its keys, webhooks or domains without bound; one more is 409 limit_reached.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { liveApi, startTestApp, type ApiResponse } from '../support/app';
import { runCli } from '../support/cli';

function assertLimitReached(res: ApiResponse, configKey: string): void {
  assert.equal(res.status, 409, res.text);
  assert.equal(res.body.error.type, 'conflict_error');
  assert.equal(res.body.error.code, 'limit_reached');
  assert.match(res.body.error.message, new RegExp(`limits\\.${configKey}`));
}

const limits = { keysPerAccount: 3, webhooksPerAccount: 2, domainsPerAccount: 2 };

describe('per-account caps', () => {
  it('creating one API key more than limits.keysPerAccount is 409 limit_reached; revoking one makes room; the CLI may exceed it', async () => {
    const app = await startTestApp({ limits });
    try {
      const live = await liveApi(app, ['account:manage']); // the bootstrap key and this one: 2 active
      const made = await live.post('/v1/api-keys', { name: 'third', mode: 'live', scopes: ['account:manage'] });
      assert.equal(made.status, 201);
      const before = await app.db('api_keys').count({ n: '*' }).first();
      assertLimitReached(await live.post('/v1/api-keys', { name: 'fourth', mode: 'test', scopes: ['account:manage'] }), 'keysPerAccount');
      assert.deepEqual(await app.db('api_keys').count({ n: '*' }).first(), before, 'nothing was written');
      assert.equal((await live.delete(`/v1/api-keys/${made.body.id}`)).status, 200);
      assert.equal((await live.post('/v1/api-keys', { name: 'again', mode: 'test', scopes: ['account:manage'] })).status, 201);

      const config = path.join(app.dataDir, 'cli-config.json');
      fs.writeFileSync(config, JSON.stringify({ dataDir: app.dataDir, limits }));
      const operator = runCli(['keys', 'create', '--mode', 'live', '--scopes', 'all', '--config', config]);
      assert.equal(operator.code, 0, operator.stderr);
    } finally {
      await app.stop();
    }
  });

  it('creating one webhook more than limits.webhooksPerAccount is 409 limit_reached, counted per mode', async () => {
    const app = await startTestApp({ limits });
    try {
      const live = await liveApi(app, ['webhooks:manage']);
      const hook = (n: number) => ({ url: `http://127.0.0.1:9/hook${n}`, events: ['*'] });
      for (const n of [1, 2]) assert.equal((await live.post('/v1/webhooks', hook(n))).status, 201);
      assertLimitReached(await live.post('/v1/webhooks', hook(3)), 'webhooksPerAccount');
      // Sandbox webhooks are invisible to live keys, so they must not use up the live keys' room, nor the reverse.
      for (const n of [4, 5]) assert.equal((await app.api.post('/v1/webhooks', hook(n))).status, 201);
      assertLimitReached(await app.api.post('/v1/webhooks', hook(6)), 'webhooksPerAccount');
      assert.equal((await app.db('webhooks').count({ n: '*' }).first())?.n, 4);
    } finally {
      await app.stop();
    }
  });

  it('adding one domain more than limits.domainsPerAccount is 409 limit_reached', async () => {
    const app = await startTestApp({ limits });
    try {
      for (const name of ['one.test', 'two.test']) {
        assert.equal((await app.api.post('/v1/domains', { name, dkim_algorithm: 'ed25519' })).status, 201);
      }
      assertLimitReached(await app.api.post('/v1/domains', { name: 'three.test', dkim_algorithm: 'ed25519' }), 'domainsPerAccount');
      assert.equal((await app.api.get('/v1/domains')).body.pagination.total, 2);
    } finally {
      await app.stop();
    }
  });
});
