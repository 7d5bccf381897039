// SMTP AUTH on the submission port: an API key is the password; every way to be refused, and never an open relay.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../src/clock';
import { createAccount } from '../../src/auth/accounts';
import { createKey as createKeyRecord } from '../../src/auth/keys';
import { createKey, liveApi } from '../support/app';
import { addVerifiedDomain, ids, RawSmtp, refusal, startSmtpApp, submissionClient, type SmtpApp } from './helpers';

const clock = new FakeClock(Date.UTC(2026, 0, 5, 9, 0, 0));
const mail = { from: 'app@example.com', to: 'ann@example.org', subject: 'Hi', text: 'Hello', date: new Date(clock.now()) };

describe('SMTP AUTH with API keys', () => {
  let app: SmtpApp;
  let sender: string;
  before(async () => {
    app = await startSmtpApp({ rateLimit: { authFailuresPerMinute: 5 } }, clock);
    sender = await createKey(app, 'test', ['messages:send']);
  });
  after(() => app.stop());

  test('a key with messages:send logs in with PLAIN and with LOGIN, after STARTTLS, and its message is queued', async () => {
    for (const method of ['PLAIN', 'LOGIN']) {
      const client = submissionClient(app.submissionPort, sender, { authMethod: method, requireTLS: true });
      const info = await client.sendMail(mail);
      assert.match(info.response, /^250 2\.0\.0 Ok: queued as msg_[0-9a-z]{26}$/);
      const row = await app.db('messages').where({ id: ids(info.response)[0] }).first();
      assert.equal(row.source, 'smtp');
      assert.equal(row.mode, 'test');
      client.close();
    }
  });

  test('each refused AUTH says why: malformed, unknown, revoked, missing scope, IP allowlist', async () => {
    const manager = await liveApi(app, ['account:manage', 'messages:send']); // key management needs a live key
    const revoked = await manager.post('/v1/api-keys', { name: 'soon revoked', mode: 'test', scopes: ['messages:send'] });
    assert.equal((await manager.delete(`/v1/api-keys/${revoked.body.id}`)).status, 200);
    const readOnly = await createKey(app, 'test', ['messages:read']);
    const now = clock.now();
    const fenced = await createAccount(app.db, 'fenced', now);
    const fencedKey = (await createKeyRecord(app.db, { accountId: fenced.id, name: 'k', mode: 'test', scopes: ['messages:send'] }, now)).secret;
    await app.deps.settings.setAllowedIps(fenced.id, ['10.0.0.0/8']);
    const cases: Array<[string, string, number, RegExp]> = [
      ['malformed', 'hunter2', 535, /^535 5\.7\.8 Authentication failed: API key is malformed/],
      ['unknown', `svc_test_${'x'.repeat(40)}`, 535, /^535 5\.7\.8 Authentication failed: API key is not valid/],
      ['revoked', revoked.body.key, 535, /^535 5\.7\.8 Authentication failed: API key has been revoked/],
      ['missing scope', readOnly, 535, /^535 5\.7\.1 This API key lacks the scope 'messages:send'/],
      ['allowlist', fencedKey, 535, /^535 5\.7\.1 Connections from 127\.0\.0\.2 are not in this account's IP allowlist/],
    ];
    for (const [name, key, code, text] of cases) {
      const client = submissionClient(app.submissionPort, key, { localAddress: '127.0.0.2' });
      const r = await refusal(client.verify());
      assert.equal(r.code, code, name);
      assert.match(r.response, text, name);
      client.close();
    }
    assert.equal(app.deps.failures.blockedFor('127.0.0.2'), 0, 'three counted failures stay under the limit of five');
    assert.ok(!app.logs.some((l) => l.includes(readOnly) || l.includes(fencedKey)), 'keys never reach the log');
  });

  test('failed AUTH is limited per client address: 454 and disconnect for bad keys, a valid key from that address still logs in, lifted after a minute', async () => {
    const raw = await RawSmtp.connect(app.submissionPort, '127.0.0.3');
    await raw.command('EHLO client.test');
    const wrong = `AUTH PLAIN ${Buffer.from(`\0apikey\0svc_test_${'w'.repeat(40)}`).toString('base64')}`;
    for (let i = 0; i < 4; i++) assert.match(await raw.command(wrong), /^535 /);
    assert.match(await raw.command(wrong), /^454 4\.7\.0 Too many failed authentications/);
    assert.equal(await raw.reply(), 'closed');

    const guess = await RawSmtp.connect(app.submissionPort, '127.0.0.3');
    await guess.command('EHLO client.test');
    assert.match(await guess.command(wrong), /^454 4\.7\.0/, 'another bad key is refused without a 535');
    const again = submissionClient(app.submissionPort, sender, { localAddress: '127.0.0.3' });
    assert.equal(await again.verify(), true, 'a valid key is not locked out by its neighbour\'s failures');
    const elsewhere = submissionClient(app.submissionPort, sender, { localAddress: '127.0.0.4' });
    assert.equal(await elsewhere.verify(), true);

    clock.advance(61_000);
    assert.equal(await again.verify(), true);
    again.close();
    elsewhere.close();
  });

  test('without AUTH, MAIL FROM gets 530 5.7.0, also for a recipient on a verified domain, and nothing is stored', async () => {
    await addVerifiedDomain(app, 'example.com');
    const before = await app.db('messages').count({ n: '*' }).first();
    const anonymous = submissionClient(app.submissionPort, null);
    for (const to of ['someone@example.org', 'colleague@example.com']) {
      const r = await refusal(anonymous.sendMail({ ...mail, from: 'boss@example.com', to }));
      assert.equal(r.code, 530);
      assert.equal(r.command, 'MAIL FROM');
      assert.match(r.response, /^530 5\.7\.0 Authentication required: 127\.0\.0\.1 is not in a relay network/);
    }
    assert.deepEqual(await app.db('messages').count({ n: '*' }).first(), before);
    anonymous.close();
  });

  test('a key revoked during a session cannot send its next message', async () => {
    const manager = await liveApi(app, ['account:manage', 'messages:send']);
    const res = await manager.post('/v1/api-keys', { name: 'pooled', mode: 'test', scopes: ['messages:send'] });
    const client = submissionClient(app.submissionPort, res.body.key, { pool: true, maxConnections: 1 });
    await client.sendMail(mail);
    await manager.delete(`/v1/api-keys/${res.body.id}`);
    const r = await refusal(client.sendMail(mail));
    assert.equal(r.code, 530);
    assert.match(r.response, /API key has been revoked/);
    client.close();
  });

  test('an address removed from the allowlist during a session cannot send its next message', async () => {
    const account = await createAccount(app.db, 'fenced-later', clock.now());
    const { secret } = await createKeyRecord(app.db, { accountId: account.id, name: 'k', mode: 'test', scopes: ['messages:send'] }, clock.now());
    const client = submissionClient(app.submissionPort, secret, { pool: true, maxConnections: 1 });
    await client.sendMail(mail);
    await app.deps.settings.setAllowedIps(account.id, ['203.0.113.0/24']);
    const r = await refusal(client.sendMail(mail));
    assert.equal(r.code, 530);
    assert.match(r.response, /not in this account's IP allowlist/);
    client.close();
  });
});

describe('SMTP AUTH over plain text', () => {
  let app: SmtpApp;
  before(async () => {
    app = await startSmtpApp({ smtp: { submission: { allowInsecureAuth: false } } });
  });
  after(() => app.stop());

  test('is refused without allowInsecureAuth; the same key works after STARTTLS', async () => {
    const key = await createKey(app, 'test', ['messages:send']);
    const plain = submissionClient(app.submissionPort, key, { ignoreTLS: true });
    const r = await refusal(plain.verify());
    assert.equal(r.code, 538);
    assert.match(r.response, /STARTTLS/);
    const tls = submissionClient(app.submissionPort, key, { requireTLS: true });
    assert.equal(await tls.verify(), true);
    plain.close();
    tls.close();
  });
});
