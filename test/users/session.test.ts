/** Console sign-in, sessions, CSRF and throttling over real HTTP. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, liveApi, TestApp, ApiClient } from '../support/app';
import { ConsoleClient, cookieOf, makeUser, PASSWORD, signedIn } from '../support/console';
import { createAccount } from '../../src/auth/accounts';
import { FakeClock } from '../../src/clock';
import { SignInThrottle } from '../../src/users/throttle';

const HOUR = 3600_000;

describe('console sessions', () => {
  let app: TestApp;
  const clock = new FakeClock();
  before(async () => {
    app = await startTestApp({}, { clock });
    await createAccount(app.db, 'other', clock.now());
    await makeUser(app, 'Admin@Example.com', 'admin');
    await makeUser(app, 'member@example.com', 'member', 'default');
  });
  after(() => app.stop());

  test('sign-in sets an HttpOnly SameSite=Strict cookie and answers the user and a CSRF token', async () => {
    const client = new ConsoleClient(app.http.url);
    const res = await client.signIn('ADMIN@example.com');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.user.email, 'admin@example.com');
    assert.equal(res.body.user.role, 'admin');
    assert.match(res.body.csrf_token, /^[A-Za-z0-9_-]{43}$/);
    const line = res.headers.getSetCookie()[0];
    assert.match(line, /^pigeon_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict$/, 'no Secure over plain HTTP');
    const session = await client.get('/v1/session');
    assert.equal(session.status, 200);
    assert.equal(session.body.csrf_token, res.body.csrf_token);
    assert.deepEqual(session.body.accounts, ['default', 'other']);
  });

  test('an unknown email and a wrong password get the same 401 invalid_credentials', async () => {
    const unknown = await new ConsoleClient(app.http.url).signIn('nobody@example.com');
    const wrong = await new ConsoleClient(app.http.url).signIn('member@example.com', 'not the password at all');
    for (const res of [unknown, wrong]) {
      assert.equal(res.status, 401);
      assert.equal(res.body.error.code, 'invalid_credentials');
      assert.equal(res.body.error.message, unknown.body.error.message);
      assert.equal(cookieOf(res), undefined, 'no cookie on failure');
    }
  });

  test('a cookie planted before sign-in is not the session after it (no fixation)', async () => {
    const planted = 'pigeon_session=' + 'A'.repeat(43);
    const client = new ConsoleClient(app.http.url);
    client.cookie = planted;
    assert.equal((await client.signIn('member@example.com')).status, 200);
    assert.notEqual(client.cookie, planted);
    const attacker = new ConsoleClient(app.http.url);
    attacker.cookie = planted;
    assert.equal((await attacker.get('/v1/session')).status, 401);
    assert.equal((await attacker.get('/v1/account')).status, 401);
    // Even a real session id presented at sign-in is replaced, not kept.
    const before = client.cookie;
    assert.equal((await client.signIn('member@example.com')).status, 200);
    assert.notEqual(client.cookie, before);
  });

  test('a session acts as a live key of its account; a change without the CSRF token is 403 and changes nothing', async () => {
    const member = await signedIn(app, 'member@example.com');
    const account = await member.get('/v1/account');
    assert.equal(account.status, 200);
    assert.equal(account.body.name, 'default');
    assert.equal(account.body.key.mode, 'live');
    const keysBefore = (await member.get('/v1/api-keys')).body.pagination.total;
    const body = { name: 'from the console', mode: 'live', scopes: ['messages:send'] };
    const csrf = member.csrf;
    for (const token of ['', 'wrong', csrf.slice(0, -1) + (csrf.endsWith('A') ? 'B' : 'A')]) {
      member.csrf = token;
      const res = await member.post('/v1/api-keys', body);
      assert.equal(res.status, 403, token);
      assert.equal(res.body.error.code, 'csrf_failed');
    }
    assert.equal((await member.get('/v1/api-keys')).body.pagination.total, keysBefore, 'no key was made');
    member.csrf = csrf;
    assert.equal((await member.post('/v1/api-keys', body)).status, 201);
    assert.equal((await member.get('/v1/api-keys')).body.pagination.total, keysBefore + 1);
  });

  test('with both a key and a cookie, the key decides (and needs no CSRF token)', async () => {
    const member = await signedIn(app, 'member@example.com');
    const res = await app.api.get('/v1/account', { cookie: member.cookie });
    assert.equal(res.body.key.mode, 'test', 'the sandbox key, not the live session');
    const send = await app.api.post('/v1/api-keys', { name: 'x', mode: 'test', scopes: ['messages:send'] }, { cookie: member.cookie });
    assert.equal(send.status, 403);
    assert.equal(send.body.error.code, 'live_key_required', 'the sandbox key was used, not the session');
  });

  test('an admin acts for the account named by X-Pigeon-Account; an unknown name is 404', async () => {
    const admin = await signedIn(app, 'admin@example.com');
    assert.equal((await admin.get('/v1/account')).body.name, 'default', 'default: the first account');
    admin.account = 'other';
    assert.equal((await admin.get('/v1/account')).body.name, 'other');
    admin.account = 'nope';
    const res = await admin.get('/v1/account');
    assert.equal(res.status, 404);
    assert.equal(res.body.error.code, 'account_not_found');
  });

  test('a member naming another account gets 403 on every account route', async () => {
    const member = await signedIn(app, 'member@example.com');
    member.account = 'other';
    const spec = (await app.api.get('/v1/openapi.json')).body;
    let checked = 0;
    for (const [path, ops] of Object.entries<Record<string, { 'x-required-scope'?: string }>>(spec.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        if (!op['x-required-scope']) continue;
        const url = path.replace(/\{(\w+)\}/g, 'x_$1');
        const res = await member.request(method.toUpperCase(), url, method === 'get' || method === 'delete' ? undefined : {});
        assert.equal(res.status, 403, `${method} ${path}: ${res.text}`);
        assert.equal(res.body.error.code, 'account_not_allowed', `${method} ${path}`);
        checked++;
      }
    }
    assert.ok(checked > 40, `checked ${checked} routes`);
    member.account = 'default';
    assert.equal((await member.get('/v1/account')).status, 200, 'naming their own account is fine');
    assert.deepEqual((await member.get('/v1/session')).body.accounts, ['default']);
  });

  test('sign-out deletes the session and clears the cookie; the old cookie no longer works', async () => {
    const member = await signedIn(app, 'member@example.com');
    const noCsrf = await member.delete('/v1/session', { 'x-csrf-token': '' });
    assert.equal(noCsrf.status, 403, 'signing out is a change: it needs the token too');
    const res = await member.delete('/v1/session');
    assert.equal(res.status, 204);
    assert.match(res.headers.getSetCookie()[0], /^pigeon_session=; Max-Age=0; Path=\/; HttpOnly; SameSite=Strict/);
    assert.equal((await member.get('/v1/session')).status, 401);
    assert.equal((await member.get('/v1/messages')).status, 401);
  });

  test('a session ends after 12 h unused and 7 days after sign-in however used', async () => {
    const idle = await signedIn(app, 'member@example.com');
    clock.advance(11 * HOUR);
    assert.equal((await idle.get('/v1/session')).status, 200, 'used within 12 h');
    clock.advance(11 * HOUR);
    assert.equal((await idle.get('/v1/session')).status, 200, 'used again within 12 h of the last use');
    clock.advance(12 * HOUR);
    const expired = await idle.get('/v1/account');
    assert.equal(expired.status, 401);
    assert.equal(expired.body.error.code, 'invalid_session');

    const busy = await signedIn(app, 'member@example.com');
    for (let hours = 0; hours + 10 < 7 * 24; hours += 10) {
      clock.advance(10 * HOUR);
      assert.equal((await busy.get('/v1/session')).status, 200, `after ${hours + 10} h`);
    }
    clock.advance(10 * HOUR);
    assert.equal((await busy.get('/v1/session')).status, 401, 'past 7 days');
  });

  test('a set-password link works once and only within 24 h', async () => {
    const { setPasswordUrl } = await makeUser(app, 'new@example.com', 'member', 'default', null);
    assert.ok(setPasswordUrl);
    assert.match(setPasswordUrl, /\/#\/set-password\/[A-Za-z0-9_-]{43}$/);
    const token = setPasswordUrl.split('/').pop() as string;
    const anon = new ApiClient(app.http.url, '');
    assert.equal((await new ConsoleClient(app.http.url).signIn('new@example.com', 'x'.repeat(12))).status, 401, 'no password yet');
    const short = await anon.post('/v1/session/password', { token, password: 'short' });
    assert.equal(short.status, 422);
    assert.equal(short.body.error.code, 'password_too_short');
    assert.equal((await anon.post('/v1/session/password', { token, password: 'a new long password' })).status, 204);
    const again = await anon.post('/v1/session/password', { token, password: 'another long password' });
    assert.equal(again.status, 422);
    assert.equal(again.body.error.code, 'invalid_token');
    assert.equal((await new ConsoleClient(app.http.url).signIn('new@example.com', 'a new long password')).status, 200);
    assert.equal((await new ConsoleClient(app.http.url).signIn('new@example.com', 'another long password')).status, 401);

    const late = await makeUser(app, 'late@example.com', 'member', 'default', null);
    clock.advance(25 * HOUR);
    const expired = await anon.post('/v1/session/password', { token: late.setPasswordUrl!.split('/').pop(), password: 'a new long password' });
    assert.equal(expired.status, 422);
  });

  test('X-Pigeon-Mode: test makes a session a sandbox caller: sandbox messages only, live-only routes refused; other values are 400', async () => {
    const client = await signedIn(app, 'member@example.com');
    const sandbox = { 'x-pigeon-mode': 'test' };
    const sent = await app.api.post('/v1/messages/send', { from: 'app@example.com', to: ['mode@example.org'], subject: 'Sandbox', text: 'x' });
    assert.equal(sent.status, 202, sent.text);
    const id = sent.body.data[0].id;
    assert.equal((await client.get(`/v1/messages/${id}`)).status, 404, 'a live session does not see sandbox mail');
    const seen = await client.get(`/v1/messages/${id}`, sandbox);
    assert.equal(seen.status, 200, seen.text);
    assert.equal(seen.body.mode, 'test');
    const keys = await client.post('/v1/api-keys', { name: 'from sandbox', mode: 'live', scopes: ['messages:send'] }, sandbox);
    assert.equal(keys.status, 403);
    assert.equal(keys.body.error.code, 'live_key_required');
    const bogus = await client.get('/v1/account', { 'x-pigeon-mode': 'admin' });
    assert.equal(bogus.status, 400);
    assert.equal(bogus.body.error.code, 'invalid_mode');
  });

});

describe('sign-in throttling', () => {
  let app: TestApp;
  const clock = new FakeClock();
  before(async () => {
    app = await startTestApp({ console: { signInMaxFailures: 3, signInWindowMinutes: 15, secureCookies: true } }, { clock });
    await makeUser(app, 'a@example.com', 'member', 'default');
    await makeUser(app, 'b@example.com', 'member', 'default');
  });
  after(() => app.stop());

  test('forty parallel wrong guesses from one address: at most the allowed three reach the password check, the rest get 429', async () => {
    const guesses = await Promise.all(Array.from({ length: 40 }, () => new ConsoleClient(app.http.url).signIn('b@example.com', 'a wrong guess!!')));
    const statuses = guesses.map((g) => g.status);
    assert.ok(statuses.filter((s) => s === 401).length <= 3, `401s: ${statuses.filter((s) => s === 401).length}`);
    assert.equal(statuses.filter((s) => s === 401 || s === 429).length, 40);
    clock.advance(15 * 60_000 + 1000);
  });

  test('failing on purpose as a user from elsewhere does not lock that user out of their own address', () => {
    const throttle = new SignInThrottle(clock, 3, 15 * 60_000);
    for (let i = 0; i < 3; i++) throttle.recordFailure('victim@example.com', '203.0.113.9');
    assert.ok(throttle.blockedFor('victim@example.com', '203.0.113.9') > 0, 'the attacker is slowed');
    assert.equal(throttle.blockedFor('victim@example.com', '198.51.100.7'), 0, 'the user, elsewhere, is not');
  });

  test('after the failures allowed for one email, even the right password gets 429 until the window passes', async () => {
    const client = new ConsoleClient(app.http.url);
    for (let i = 0; i < 3; i++) assert.equal((await client.signIn('a@example.com', 'wrong password!')).status, 401);
    const blocked = await client.signIn('a@example.com');
    assert.equal(blocked.status, 429);
    assert.equal(blocked.body.error.code, 'too_many_sign_in_failures');
    assert.ok(Number(blocked.headers.get('retry-after')) > 0);
    assert.equal(cookieOf(blocked), undefined);
    clock.advance(15 * 60_000 + 1000);
    const res = await client.signIn('a@example.com');
    assert.equal(res.status, 200);
    assert.match(res.headers.getSetCookie()[0], /; Secure$/, 'console.secureCookies marks the cookie Secure');
  });

  test('failures across emails from one address throttle that address', async () => {
    clock.advance(15 * 60_000 + 1000);
    const client = new ConsoleClient(app.http.url);
    for (const email of ['x1@example.com', 'x2@example.com', 'x3@example.com']) assert.equal((await client.signIn(email)).status, 401);
    assert.equal((await client.signIn('b@example.com')).status, 429, 'a fourth email from the same address');
    clock.advance(15 * 60_000 + 1000);
  });

  test('the throttle remembers a bounded number of emails and addresses', () => {
    const throttle = new SignInThrottle(new FakeClock(), 5, 15 * 60_000);
    for (let i = 0; i < 30_000; i++) throttle.recordFailure(`guess${i}@example.com`, `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    assert.ok(throttle.size <= 2 * SignInThrottle.MAX_KEYS, `size ${throttle.size}`);
    assert.equal(throttle.blockedFor('guess29999@example.com', '127.0.0.1'), 0);
  });
});

describe('a live key is still a key', () => {
  test('a session cookie without the session is 401, a key without cookie unaffected', async () => {
    const app = await startTestApp();
    try {
      const live: ApiClient = await liveApi(app);
      assert.equal((await live.get('/v1/account')).status, 200);
      const anon = new ConsoleClient(app.http.url);
      anon.cookie = 'pigeon_session=garbage';
      const res = await anon.get('/v1/account');
      assert.equal(res.status, 401);
      assert.equal(res.body.error.code, 'invalid_session');
      assert.equal(JSON.stringify(res.body).includes('at '), false, 'no stack trace');
    } finally {
      await app.stop();
    }
  });
  void PASSWORD;
});
