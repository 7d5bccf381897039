// Mail relayed through the submission port takes the API's accept path: same rules, same records, and the SMTP-only hardening.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../src/clock';
import { createKey } from '../support/app';
import { addVerifiedDomain, ids, message, RawSmtp, refusal, startSmtpApp, submissionClient, type SmtpApp, type Transport } from './helpers';

const clock = new FakeClock(Date.UTC(2026, 0, 5, 9, 0, 0));
const MAX_BYTES = 20_000;

describe('relaying through the submission port', () => {
  let app: SmtpApp;
  let live: Transport;
  let sandbox: Transport;
  let liveKey: string;
  let testKey: string;
  const stored = async () => Number((await app.db('messages').count({ n: '*' }).first())?.n);
  before(async () => {
    app = await startSmtpApp({ limits: { maxMessageBytes: MAX_BYTES, maxRecipients: 5 }, smtp: { submission: { maxConnectionsPerClient: 3 } } }, clock, { holdQueue: true });
    await addVerifiedDomain(app, 'example.com');
    liveKey = await createKey(app, 'live', ['messages:send']);
    testKey = await createKey(app, 'test', ['messages:send']);
    live = submissionClient(app.submissionPort, liveKey, { pool: true, maxConnections: 1 });
    sandbox = submissionClient(app.submissionPort, testKey, { pool: true, maxConnections: 1 });
  });
  after(async () => {
    live.close();
    sandbox.close();
    await app.stop();
  });

  test('one message per envelope recipient, ids in the reply, X-Pigeon headers applied and removed, events and usage', async () => {
    const raw = message({
      To: 'Ann <ann@example.org>', Cc: 'cc@example.org', Bcc: 'hidden@example.org',
      'X-Pigeon-Tags': 'welcome, onboarding', 'X-Pigeon-Metadata': '{"user":"42","plan":"pro"}',
      'X-Pigeon-IP-Pool': 'default', 'X-Pigeon-Track-Opens': 'true', 'X-Custom': 'kept',
    });
    const info = await live.sendMail({ envelope: { from: 'bounces@example.com', to: ['ann@example.org', 'cc@example.org', 'hidden@example.org'] }, raw });
    const queued = ids(info.response);
    assert.equal(queued.length, 3);
    assert.equal(info.response, `250 2.0.0 Ok: queued as ${queued.join(' ')}`);
    const rows = await app.db('messages').whereIn('id', queued).orderBy('id');
    assert.deepEqual(rows.map((r) => [r.to_email, r.rcpt_type, r.mode, r.status, r.source]), [
      ['ann@example.org', 'to', 'live', 'queued', 'smtp'],
      ['cc@example.org', 'cc', 'live', 'queued', 'smtp'],
      ['hidden@example.org', 'bcc', 'live', 'queued', 'smtp'],
    ]);
    assert.equal(rows[0].from_email, 'app@example.com', 'the From header, not MAIL FROM');
    assert.deepEqual(JSON.parse(rows[0].tags), ['welcome', 'onboarding']);
    assert.deepEqual(JSON.parse(rows[0].metadata), { user: '42', plan: 'pro' });
    assert.equal(rows[0].ip_pool, 'default');
    assert.equal(Boolean(rows[0].track_opens), true);
    assert.equal(Boolean(rows[0].track_clicks), false);
    const content = (await app.db('message_contents').where({ id: rows[0].content_id }).first()).raw.toString('latin1');
    const header = content.split('\r\n\r\n')[0];
    assert.doesNotMatch(header, /X-Pigeon-/i);
    assert.doesNotMatch(header, /^Bcc:/im);
    assert.match(header, /^X-Custom: kept$/m);
    assert.match(content, /\r\n\r\nHello from an app\.\r\n$/);
    const events = await app.db('events').whereIn('message_id', queued);
    assert.deepEqual(events.map((e) => e.type), ['message.queued', 'message.queued', 'message.queued']);
    assert.deepEqual(JSON.parse(events[0].data).tags, ['welcome', 'onboarding']);
    const usage = await app.db('usage_counters').where({ account_id: app.accountId }).first();
    assert.equal(Number(usage.messages), 3);
  });

  test('X-Pigeon-Send-At schedules the message', async () => {
    const at = new Date(clock.now() + 3_600_000).toISOString();
    const info = await sandbox.sendMail({ envelope: { from: 'app@example.com', to: ['ann@example.org'] }, raw: message({ 'X-Pigeon-Send-At': at }) });
    const row = await app.db('messages').where({ id: ids(info.response)[0] }).first();
    assert.equal(row.status, 'scheduled');
    assert.equal(Number(row.send_at), Date.parse(at));
  });

  test('the From header decides the domain rule: an unverified From is refused for live keys with 550 5.7.1, MAIL FROM does not matter', async () => {
    const before = await stored();
    const r = await refusal(live.sendMail({ envelope: { from: 'app@example.com', to: ['ann@example.org'] }, raw: message({ From: 'ceo@unverified.test' }) }));
    assert.equal(r.code, 550);
    assert.match(r.response, /^550 5\.7\.1 unverified\.test is not a verified sending domain of this account/);
    assert.equal(await stored(), before);
    const ok = await live.sendMail({ envelope: { from: 'anything@unverified.test', to: ['ann@example.org'] }, raw: message({}) });
    assert.equal(ids(ok.response).length, 1);
    const sandboxed = await sandbox.sendMail({ envelope: { from: 'a@unverified.test', to: ['ann@example.org'] }, raw: message({ From: 'ceo@unverified.test' }) });
    assert.equal(ids(sandboxed.response).length, 1, 'test keys may use any domain');
  });

  test('bad X-Pigeon headers are refused with a reply naming the header, and nothing is stored', async () => {
    const far = new Date(clock.now() + 73 * 3_600_000).toISOString();
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ 'X-Pigeon-Metadata': '{user: 42}' }, /^554 5\.6\.0 X-Pigeon-Metadata: not valid JSON/],
      [{ 'X-Pigeon-Metadata': '{"user":42}' }, /^554 5\.6\.0 X-Pigeon-Metadata: .*\(user\)$/],
      [{ 'X-Pigeon-Metadata': '["a"]' }, /^554 5\.6\.0 X-Pigeon-Metadata: expected a JSON object/],
      [{ 'X-Pigeon-Tags': 'ok, "quoted"' }, /^554 5\.6\.0 X-Pigeon-Tags: tags may not contain control characters, " or \\/],
      [{ 'X-Pigeon-Tags': Array.from({ length: 11 }, (_, i) => `t${i}`).join(',') }, /^554 5\.6\.0 X-Pigeon-Tags: /],
      [{ 'X-Pigeon-IP-Pool': 'nope' }, /^554 5\.6\.0 X-Pigeon-IP-Pool: no IP pool named 'nope'/],
      [{ 'X-Pigeon-Send-At': 'tomorrow' }, /^554 5\.6\.0 X-Pigeon-Send-At: expected an ISO 8601 date-time/],
      [{ 'X-Pigeon-Send-At': far }, /^554 5\.6\.0 X-Pigeon-Send-At: send_at may be at most 72 hours ahead/],
      [{ 'X-Pigeon-Track-Clicks': 'maybe' }, /^554 5\.6\.0 X-Pigeon-Track-Clicks: 'maybe' is not a boolean/],
      [{ 'X-Pigeon-Tag': 'typo' }, /^554 5\.6\.0 X-Pigeon-Tag: unknown header/],
    ];
    const before = await stored();
    for (const [headers, reply] of cases) {
      const r = await refusal(sandbox.sendMail({ envelope: { from: 'app@example.com', to: ['ann@example.org'] }, raw: message(headers) }));
      assert.match(r.response, reply, JSON.stringify(headers));
    }
    const twice = `X-Pigeon-Tags: a\r\n${message({ 'X-Pigeon-Tags': 'b' })}`;
    assert.match((await refusal(sandbox.sendMail({ envelope: { from: 'app@example.com', to: ['a@example.org'] }, raw: twice }))).response, /X-Pigeon-Tags: given more than once/);
    assert.equal(await stored(), before);
  });

  test('a message without From or Date, or with two From headers, gets a clear 554', async () => {
    const envelope = { from: 'app@example.com', to: ['ann@example.org'] };
    const noFrom = await refusal(sandbox.sendMail({ envelope, raw: message({ From: '' }) }));
    assert.match(noFrom.response, /^554 5\.6\.0 Message has no From header/);
    const noDate = await refusal(sandbox.sendMail({ envelope, raw: message({ Date: '' }) }));
    assert.match(noDate.response, /^554 5\.6\.0 Message has no Date header; RFC 5322 requires one/);
    const twoFrom = await refusal(sandbox.sendMail({ envelope, raw: `From: other@example.com\r\n${message({})}` }));
    assert.match(twoFrom.response, /^554 5\.6\.0 Message has more than one From header/);
  });

  test('recipients beyond limits.maxRecipients get 452 4.5.3 at RCPT; the others are sent', async () => {
    const to = Array.from({ length: 6 }, (_, i) => `r${i}@example.org`);
    const info = await sandbox.sendMail({ envelope: { from: 'app@example.com', to }, raw: message({}) });
    assert.equal(ids(info.response).length, 5);
    assert.deepEqual(info.rejected, ['r5@example.org']);
    const [err] = (info as unknown as { rejectedErrors: Array<{ response: string }> }).rejectedErrors;
    assert.match(err.response, /^452 4\.5\.3 Too many recipients: at most 5 per message/);
  });

  test('oversize is refused at MAIL FROM when SIZE says so, and at the end of data otherwise', async () => {
    const before = await stored();
    const raw = await RawSmtp.connect(app.submissionPort);
    await raw.login(testKey);
    assert.match(await raw.command(`MAIL FROM:<app@example.com> SIZE=${MAX_BYTES + 1}`), /^552 /);
    assert.match(await raw.command(`MAIL FROM:<app@example.com> SIZE=${MAX_BYTES}`), /^250 /);
    raw.close();
    const big = message({}, 'x'.repeat(900) + '\r\n'.repeat(1) + ('y'.repeat(990) + '\r\n').repeat(20));
    const r = await refusal(sandbox.sendMail({ envelope: { from: 'app@example.com', to: ['ann@example.org'] }, raw: big }));
    assert.equal(r.code, 552);
    assert.equal(r.response, `552 5.3.4 Message exceeds the maximum size of ${MAX_BYTES} bytes`);
    assert.equal(await stored(), before);
  });

  test('SMTP smuggling: a bare LF or bare CR in DATA is refused and the smuggled commands never run', async () => {
    const before = await stored();
    const raw = await RawSmtp.connect(app.submissionPort);
    await raw.login(testKey);
    for (const [end, fault] of [['\n.\n', /bare LF/], ['\r.\r', /bare CR/], ['\r\n.\n', /bare LF/]] as const) {
      assert.match(await raw.command('MAIL FROM:<app@example.com>'), /^250/);
      assert.match(await raw.command('RCPT TO:<ann@example.org>'), /^250/);
      assert.match(await raw.command('DATA'), /^354/);
      raw.write(`${message({})}${end}MAIL FROM:<ceo@example.com>\r\nRCPT TO:<victim@example.org>\r\nDATA\r\n${message({ From: 'ceo@example.com' })}.\r\n`);
      const reply = await raw.reply();
      assert.match(reply, /^554 5\.6\.0 /);
      assert.match(reply, fault);
      assert.match(await raw.command('NOOP'), /^250/, 'the next reply answers NOOP: nothing smuggled was executed');
    }
    raw.close();
    assert.equal(await stored(), before);
  });

  test('a client that vanishes in the middle of DATA leaves nothing behind, and the server keeps serving', async () => {
    const before = await stored();
    const raw = await RawSmtp.connect(app.submissionPort);
    await raw.login(testKey);
    await raw.command('MAIL FROM:<app@example.com>');
    await raw.command('RCPT TO:<ann@example.org>');
    assert.match(await raw.command('DATA'), /^354/);
    raw.write('From: app@example.com\r\nSubject: half\r\n\r\nand then');
    raw.close();
    const info = await sandbox.sendMail({ envelope: { from: 'app@example.com', to: ['ann@example.org'] }, raw: message({}) });
    assert.equal(ids(info.response).length, 1);
    assert.equal(await stored(), before + 1);
  });

  test('lines over 998 characters are refused', async () => {
    const r = await refusal(sandbox.sendMail({ envelope: { from: 'app@example.com', to: ['ann@example.org'] }, raw: message({}, 'z'.repeat(999)) }));
    assert.match(r.response, /^554 5\.6\.0 Message has a line longer than 998 characters/);
  });

  test('envelope addresses are checked with the API\'s validator', async () => {
    const raw = await RawSmtp.connect(app.submissionPort);
    await raw.login(testKey);
    assert.match(await raw.command('MAIL FROM:<app@localhost>'), /^553 5\.1\.7 Sender <app@localhost> rejected: 'localhost' is not a valid domain/);
    assert.match(await raw.command('MAIL FROM:<app@example.com>'), /^250/);
    assert.match(await raw.command('RCPT TO:<ann@example.123>'), /^553 5\.1\.3 Recipient <ann@example\.123> rejected: 'example\.123' is not a valid domain/);
    raw.close();
  });

  test('connections per client address are capped', async () => {
    const open = await Promise.all([1, 2, 3].map(() => RawSmtp.connect(app.submissionPort, '127.0.0.6')));
    assert.deepEqual(open.map((c) => c.greeting.slice(0, 4)), ['220 ', '220 ', '220 ']);
    const fourth = await RawSmtp.connect(app.submissionPort, '127.0.0.6');
    assert.match(fourth.greeting, /^421 4\.7\.0 Too many connections from 127\.0\.0\.6/);
    assert.equal(await fourth.reply(), 'closed');
    const other = await RawSmtp.connect(app.submissionPort, '127.0.0.7');
    assert.match(await other.command('NOOP'), /^250/);
    open.forEach((c) => c.close());
    other.close();
    fourth.close();
  });
});

describe('stopping the submission listener', () => {
  test('says 421 at once to sessions between messages and lets a message whose data is arriving finish', async () => {
    const app = await startSmtpApp({}, undefined, { holdQueue: true });
    try {
      const key = await createKey(app, 'test', ['messages:send']);
      const idle = await RawSmtp.connect(app.submissionPort);
      await idle.login(key);
      const busy = await RawSmtp.connect(app.submissionPort);
      await busy.login(key);
      assert.match(await busy.command('MAIL FROM:<app@example.com>'), /^250/);
      assert.match(await busy.command('RCPT TO:<ann@example.org>'), /^250/);
      assert.match(await busy.command('DATA'), /^354/);
      const [head, rest] = [message({}).slice(0, 40), message({}).slice(40)];
      busy.write(head);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const closed = app.listeners['smtp-submission'].close();
      assert.equal(await idle.reply(), '421 4.3.2 Service shutting down');
      assert.equal(await idle.reply(), 'closed');
      busy.write(`${rest}.\r\n`);
      assert.match(await busy.reply(), /^250 2\.0\.0 Ok: queued as msg_/);
      assert.match(await busy.command('MAIL FROM:<app@example.com>'), /^421 /);
      await closed;
    } finally {
      await app.stop();
    }
  });
});
