/** The authentication and scope matrix over real HTTP. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, createKey, liveApi, ApiClient, TestApp } from '../support/app';
import { SCOPES } from '../../src/auth/scopes';
import { createAccount } from '../../src/auth/accounts';
import { createKey as createKeyInDb } from '../../src/auth/keys';
import { AuthFailureLimiter } from '../../src/auth/rate-limit';
import { FakeClock } from '../../src/clock';

/** One route per scope, each a GET or harmless call that needs exactly that scope. */
const ROUTE_FOR_SCOPE: Record<string, [string, string]> = {
  'messages:send': ['POST', '/v1/messages/send'],
  'messages:read': ['GET', '/v1/messages'],
  'domains:manage': ['GET', '/v1/domains'],
  'webhooks:manage': ['GET', '/v1/webhooks'],
  'ip-pools:manage': ['GET', '/v1/ip-pools'],
  'analytics:read': ['GET', '/v1/analytics/stats'],
  'account:read': ['GET', '/v1/account'],
  'suppressions:manage': ['POST', '/v1/suppressions/upload'],
  'account:manage': ['GET', '/v1/api-keys'],
};

describe('authentication', () => {
  let app: TestApp;
  let live: ApiClient; // key management needs a live key
  before(async () => {
    app = await startTestApp({ rateLimit: { authFailuresPerMinute: 1000 } });
    live = await liveApi(app);
  });
  after(() => app.stop());

  const errorOf = (res: { body: { error: { code: string; type: string; request_id: string } } }) => res.body.error;

  test('a request without Authorization is 401 missing_api_key in the error shape', async () => {
    const res = await app.api.withKey('').get('/v1/account');
    assert.equal(res.status, 401);
    assert.equal(errorOf(res).code, 'missing_api_key');
    assert.equal(errorOf(res).type, 'authentication_error');
    assert.equal(errorOf(res).request_id, res.headers.get('x-request-id'));
    assert.equal(res.headers.get('www-authenticate'), 'Bearer');
  });

  test('a malformed header or key is 401 malformed_api_key', async () => {
    for (const header of ['Basic abc', 'Bearer', 'Bearer sk_live_123', 'Bearer svc_test_short']) {
      const res = await app.api.withKey('').get('/v1/account', { authorization: header });
      assert.equal(res.status, 401, header);
      assert.match(errorOf(res).code, /malformed_api_key|missing_api_key/, header);
    }
  });

  test('an unknown key is 401 invalid_api_key', async () => {
    const res = await app.api.withKey('svc_live_' + 'A'.repeat(40)).get('/v1/account');
    assert.equal(res.status, 401);
    assert.equal(errorOf(res).code, 'invalid_api_key');
  });

  test('a revoked key is 401 revoked_api_key, through the API and for later requests', async () => {
    const secret = await createKey(app, 'live', ['account:read']);
    assert.equal((await app.api.withKey(secret).get('/v1/account')).status, 200);
    const list = await live.get('/v1/api-keys?limit=100');
    const id = list.body.data.find((k: { prefix: string }) => secret.startsWith(k.prefix)).id;
    const revoked = await live.delete(`/v1/api-keys/${id}`);
    assert.equal(revoked.status, 200);
    assert.equal(revoked.body.revoked, true);
    const res = await app.api.withKey(secret).get('/v1/account');
    assert.equal(res.status, 401);
    assert.equal(errorOf(res).code, 'revoked_api_key');
  });

  test('test and live keys report their own mode', async () => {
    const live = await createKey(app, 'live', ['account:read']);
    assert.equal((await app.api.withKey(live).get('/v1/account')).body.key.mode, 'live');
    assert.equal((await app.api.get('/v1/account')).body.key.mode, 'test');
    assert.match(live, /^svc_live_[A-Za-z0-9]{40}$/);
    assert.match(app.key, /^svc_test_[A-Za-z0-9]{40}$/);
  });

  for (const scope of SCOPES) {
    test(`a key without ${scope} gets 403 insufficient_scope naming it`, async () => {
      const others = SCOPES.filter((s) => s !== scope);
      const secret = await createKey(app, 'test', others);
      const [method, path] = ROUTE_FOR_SCOPE[scope];
      const res = await app.api.withKey(secret).request(method, path, method === 'POST' ? {} : undefined);
      assert.equal(res.status, 403, `${method} ${path}`);
      assert.equal(errorOf(res).code, 'insufficient_scope');
      assert.equal(res.body.error.param, scope);
      assert.match(res.body.error.message, new RegExp(scope));
    });
  }

  test('keys are stored as hashes: the secret is not in the database', async () => {
    const secret = await createKey(app, 'live', ['account:read']);
    const rows = await app.db('api_keys').select();
    assert.ok(rows.length > 1);
    assert.ok(!JSON.stringify(rows).includes(secret));
    assert.ok(rows.some((r) => r.key_hash.length === 64));
  });

  test('another account cannot see or revoke this account\'s keys', async () => {
    const other = await createAccount(app.db, 'other-' + Date.now(), Date.now());
    const { secret } = await createKeyInDb(app.db, { accountId: other.id, name: 'x', mode: 'live', scopes: ['account:manage'] }, Date.now());
    const mine = await live.get('/v1/api-keys');
    const theirs = await app.api.withKey(secret).get('/v1/api-keys');
    assert.equal(theirs.body.data.length, 1);
    assert.equal((await app.api.withKey(secret).delete(`/v1/api-keys/${mine.body.data[0].id}`)).status, 404);
  });

  test('POST /v1/api-keys validates its body and shows the key once', async () => {
    const bad = await live.post('/v1/api-keys', { name: 'x', mode: 'prod', scopes: ['nope'] });
    assert.equal(bad.status, 422);
    assert.equal(bad.body.error.param, 'mode');
    assert.deepEqual(bad.body.error.details.map((d: { param: string }) => d.param), ['mode', 'scopes[0]']);
    const ok = await live.post('/v1/api-keys', { name: 'ci', mode: 'test', scopes: ['messages:read'] });
    assert.equal(ok.status, 201);
    assert.match(ok.body.key, /^svc_test_/);
    const listed = await live.get('/v1/api-keys');
    assert.ok(!listed.text.includes(ok.body.key));
  });
});

describe('failed authentication is slowed down per address', () => {
  test('after 20 bad keys from one address, a valid key from it still authenticates while further bad keys get 429', async () => {
    const app = await startTestApp({ rateLimit: { authFailuresPerMinute: 20 } });
    try {
      const bad = app.api.withKey('svc_test_' + 'B'.repeat(40));
      for (let i = 0; i < 20; i++) assert.equal((await bad.get('/v1/account')).status, 401);
      const refused = await bad.get('/v1/account');
      assert.equal(refused.status, 429);
      assert.equal(refused.body.error.code, 'too_many_auth_failures');
      assert.ok(Number(refused.headers.get('retry-after')) > 0);
      const other = await app.api.withKey('svc_live_' + 'C'.repeat(40)).get('/v1/account');
      assert.equal(other.status, 429, 'another guess is refused the same way, not answered 401');
      assert.equal((await app.api.get('/v1/account')).status, 200, 'the valid key is not locked out');
      assert.equal((await bad.get('/v1/account')).status, 429, 'a success does not lift the block for guesses');
    } finally {
      await app.stop();
    }
  });

  test('a guesser rotating through the addresses of one IPv6 /64 is throttled as one client after 20 bad keys', async () => {
    // Behind a trusted proxy the client address is X-Forwarded-For's last entry: the one way to test other
    // addresses than loopback. The limiter sees them as the proxy reports them.
    const app = await startTestApp({ http: { trustProxy: true }, rateLimit: { authFailuresPerMinute: 20 } });
    try {
      const bad = app.api.withKey('svc_test_' + 'B'.repeat(40));
      const from = (address: string) => ({ 'x-forwarded-for': address });
      for (let i = 1; i <= 20; i++) assert.equal((await bad.get('/v1/account', from(`2001:db8:1:2::${i.toString(16)}`))).status, 401);
      const rotated = await bad.get('/v1/account', from('2001:db8:1:2:ffff:ffff:ffff:ffff'));
      assert.equal(rotated.status, 429, 'a fresh address in the same /64 is the same client');
      assert.equal((await bad.get('/v1/account', from('2001:db8:1:3::1'))).status, 401, 'the next /64 is another client');
      assert.equal((await app.api.get('/v1/account', from('2001:db8:1:2::99'))).status, 200, 'a valid key from the /64 still works');
    } finally {
      await app.stop();
    }
  });

  test('failures from 25,000 rotating addresses keep at most 10,000 in memory, and expired ones are pruned', () => {
    const clock = new FakeClock();
    const limiter = new AuthFailureLimiter(clock, 20);
    for (let i = 0; i < 25_000; i++) limiter.recordFailure(`2001:db8:${i.toString(16)}::1`);
    assert.ok(limiter.size <= AuthFailureLimiter.MAX_ADDRESSES, `${limiter.size} addresses remembered`);
    clock.advance(61_000);
    limiter.recordFailure('192.0.2.1');
    assert.equal(limiter.size, 1, 'a minute later only the fresh failure is left');
    assert.equal(limiter.blockedFor('2001:db8::1'), 0);
  });
});

describe('keys cannot escalate through the API', () => {
  test('a sandbox key cannot create keys of either mode, and no key can grant scopes it lacks', async () => {
    const app = await startTestApp();
    try {
      for (const mode of ['live', 'test']) {
        const minted = await app.api.post('/v1/api-keys', { name: 'x', mode, scopes: ['messages:send'] });
        assert.equal(minted.status, 403);
        assert.equal(minted.body.error.code, 'live_key_required');
      }
      const manager = app.api.withKey(await createKey(app, 'live', ['account:manage', 'messages:read']));
      const wider = await manager.post('/v1/api-keys', { name: 'x', mode: 'live', scopes: ['messages:read', 'domains:manage'] });
      assert.equal(wider.status, 403);
      assert.equal(wider.body.error.code, 'scope_not_allowed');
      assert.match(wider.body.error.message, /domains:manage/);
      const ok = await manager.post('/v1/api-keys', { name: 'x', mode: 'live', scopes: ['messages:read'] });
      assert.equal(ok.status, 201);
      assert.match(ok.body.key, /^svc_live_/);
      assert.equal((await app.db('api_keys').count({ n: '*' }).first())?.n, 3);
    } finally {
      await app.stop();
    }
  });
});
