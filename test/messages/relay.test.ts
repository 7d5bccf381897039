import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { simpleParser } from 'mailparser';
import { FakeClock } from '../../src/clock';
import { enqueueRaw } from '../../src/messages';
import { ApiError } from '../../src/http/errors';
import { startTestApp, TestApp } from '../support/app';
import { addVerifiedDomain, counts, defaultAccountId, pauseDelivery } from './helpers';

const clock = new FakeClock(Date.UTC(2026, 0, 5, 9, 0, 0));
let app: TestApp;
let accountId: string;
before(async () => {
  app = await startTestApp({ hostname: 'mx.pigeon.test', limits: { maxMessageBytes: 20_000 } }, { clock });
  await pauseDelivery(app); // rows are counted: the MTA must not add events while a test looks
  accountId = await defaultAccountId(app);
  await addVerifiedDomain(app, accountId, 'example.com');
});
after(() => app.stop());

const RAW = [
  'From: App <app@example.com>',
  'To: Ann <ann@example.org>',
  'Cc: cc@example.org',
  'Bcc: secret@example.org,',
  ' other-secret@example.org',
  'Subject: Relayed',
  'Content-Type: text/plain; charset=utf-8',
  '',
  'Body line one.',
  'Bcc: this body line stays',
  '',
].join('\r\n');

test('a relayed message gets Message-ID and Date, loses Bcc, and becomes one message per recipient', async () => {
  const result = await enqueueRaw(app.deps, { accountId, mode: 'live' }, {
    raw: Buffer.from(RAW), from: 'app@example.com', recipients: ['ann@example.org', 'cc@example.org', 'secret@example.org'],
    tags: ['smtp'], source: 'smtp',
  });
  assert.equal(result.ids.length, 3);
  assert.deepEqual(result.messages.map((m) => m.status), ['queued', 'queued', 'queued']);
  const rows = await app.db('messages').whereIn('id', result.ids).orderBy('id');
  assert.deepEqual(rows.map((r) => r.rcpt_type), ['to', 'cc', 'bcc']);
  assert.equal(new Set(rows.map((r) => r.content_id)).size, 1);
  assert.deepEqual(rows.map((r) => r.source), ['smtp', 'smtp', 'smtp']);
  assert.equal(rows[0].subject, 'Relayed');
  assert.equal(rows[0].message_id_header, `${result.ids[0]}@mx.pigeon.test`);
  const raw = (await app.db('message_contents').where({ id: rows[0].content_id }).first()).raw as Buffer;
  const text = raw.toString();
  assert.doesNotMatch(text.split('\r\n\r\n')[0], /secret/);
  assert.match(text, /\r\n\r\nBody line one\.\r\nBcc: this body line stays\r\n$/);
  const mail = await simpleParser(raw);
  assert.equal(mail.messageId, `<${result.ids[0]}@mx.pigeon.test>`);
  assert.equal(mail.date?.getTime(), clock.now());
  const events = await app.db('events').whereIn('message_id', result.ids);
  assert.equal(events.length, 3);
  await app.deps.writer.flushCounters(); // PostgreSQL sums counters for up to 1 s (counterFlushMs)
  assert.equal(Number((await app.db('usage_counters').where({ account_id: accountId }).first()).messages), 3);
});

test('an existing Message-ID and Date are kept', async () => {
  const raw = Buffer.from('Message-ID: <own@example.com>\r\nDate: Mon, 05 Jan 2026 08:00:00 +0000\r\nFrom: app@example.com\r\nSubject: x\r\n\r\nhi\r\n');
  const result = await enqueueRaw(app.deps, { accountId, mode: 'test' }, { raw, from: 'app@example.com', recipients: ['z@example.org'] });
  const row = await app.db('messages').where({ id: result.ids[0] }).first();
  assert.equal(row.message_id_header, 'own@example.com');
  assert.equal(row.rcpt_type, 'bcc', 'not named in To or Cc');
  const stored = (await app.db('message_contents').where({ id: row.content_id }).first()).raw.toString();
  assert.equal(stored.match(/^Date:/gm)?.length, 1);
  assert.equal(stored.match(/^Message-ID:/gim)?.length, 1);
});

test('relayed mail meets the same limits and rules as the API, storing nothing when refused', async () => {
  const cases: Array<[string, () => Promise<unknown>, number, string]> = [
    ['unverified live domain', () => enqueueRaw(app.deps, { accountId, mode: 'live' }, { raw: Buffer.from(RAW), from: 'app@other.example', recipients: ['a@example.org'] }), 422, 'domain_not_verified'],
    ['too many recipients', () => enqueueRaw(app.deps, { accountId, mode: 'test' }, { raw: Buffer.from(RAW), from: 'app@example.com', recipients: Array.from({ length: 51 }, (_, i) => `r${i}@example.org`) }), 422, 'too_many_recipients'],
    ['too large', () => enqueueRaw(app.deps, { accountId, mode: 'test' }, { raw: Buffer.alloc(20_001, 65), from: 'app@example.com', recipients: ['a@example.org'] }), 413, 'message_too_large'],
    ['bad recipient', () => enqueueRaw(app.deps, { accountId, mode: 'test' }, { raw: Buffer.from(RAW), from: 'app@example.com', recipients: ['not an address'] }), 422, 'invalid_address'],
    ['unknown pool', () => enqueueRaw(app.deps, { accountId, mode: 'test' }, { raw: Buffer.from(RAW), from: 'app@example.com', recipients: ['a@example.org'], ipPool: 'nope' }), 422, 'unknown_ip_pool'],
    ['tag with a quote', () => enqueueRaw(app.deps, { accountId, mode: 'test' }, { raw: Buffer.from(RAW), from: 'app@example.com', recipients: ['a@example.org'], tags: ['a"b'] }), 422, 'invalid_tag'],
    ['send_at too far', () => enqueueRaw(app.deps, { accountId, mode: 'test' }, { raw: Buffer.from(RAW), from: 'app@example.com', recipients: ['a@example.org'], sendAt: clock.now() + 73 * 3600_000 }), 422, 'send_at_too_far'],
  ];
  for (const [name, run, status, code] of cases) {
    const before = await counts(app);
    await assert.rejects(run, (err: unknown) => err instanceof ApiError && err.status === status && err.code === code, name);
    assert.deepEqual(await counts(app), before, name);
  }
});

test('a relayed message with send_at is scheduled', async () => {
  const result = await enqueueRaw(app.deps, { accountId, mode: 'test' }, { raw: Buffer.from(RAW), from: 'app@example.com', recipients: ['a@example.org'], sendAt: clock.now() + 3600_000 });
  assert.equal(result.messages[0].status, 'scheduled');
});
