import { test } from 'node:test';
import assert from 'node:assert/strict';
import { liveApi, startTestApp } from '../support/app';
import { isSuppressed } from '../../src/suppressions/store';
import { checkEmail } from '../../src/suppressions/email';
import { defaultAccountId } from '../analytics/fixtures';

test('adding, listing, filtering, reading and deleting suppressions', async () => {
  const app = await startTestApp();
  app.api = await liveApi(app); // suppression writes need a live key
  try {
    const bad = await app.api.post('/v1/suppressions', { suppressions: [{ email: 'ok@example.com' }, { email: 'not an address' }] });
    assert.equal(bad.status, 422);
    assert.equal(bad.body.error.param, 'suppressions[1].email');
    assert.equal((await app.api.get('/v1/suppressions')).body.pagination.total, 0, 'an invalid entry adds nothing');

    const add = await app.api.post('/v1/suppressions', {
      suppressions: [{ email: 'Ann@Example.com' }, { email: 'bo@example.com', reason: 'hard_bounce' }, { email: 'ann@example.com' }, { email: 'cy@other.test' }],
    });
    assert.equal(add.status, 200, add.text);
    assert.equal(add.body.added, 3);
    assert.deepEqual(add.body.data.map((s: { email: string; reason: string }) => [s.email, s.reason]), [
      ['ann@example.com', 'manual'], ['bo@example.com', 'hard_bounce'], ['cy@other.test', 'manual'],
    ]);
    const again = await app.api.post('/v1/suppressions', { suppressions: [{ email: 'bo@example.com' }], reason: 'other' });
    assert.deepEqual([again.body.added, again.body.already_present, again.body.data[0].reason], [0, 1, 'hard_bounce']);

    const page1 = await app.api.get('/v1/suppressions?limit=2');
    assert.deepEqual(page1.body.data.map((s: { email: string }) => s.email), ['cy@other.test', 'bo@example.com'], 'newest first');
    assert.deepEqual(page1.body.pagination, { has_more: true, next_cursor: page1.body.data[1].id, total: 3 });
    const page2 = await app.api.get(`/v1/suppressions?limit=2&cursor=${page1.body.pagination.next_cursor}`);
    assert.deepEqual(page2.body.data.map((s: { email: string }) => s.email), ['ann@example.com']);
    assert.equal(page2.body.pagination.has_more, false);

    const byReason = await app.api.get('/v1/suppressions?reason=hard_bounce');
    assert.deepEqual([byReason.body.pagination.total, byReason.body.data[0].email], [1, 'bo@example.com']);
    const byPrefix = await app.api.get('/v1/suppressions?email=AN');
    assert.deepEqual(byPrefix.body.data.map((s: { email: string }) => s.email), ['ann@example.com']);

    const one = await app.api.get('/v1/suppressions/ANN%40example.com');
    assert.equal(one.status, 200);
    assert.deepEqual(Object.keys(one.body).sort(), ['created_at', 'email', 'id', 'reason', 'source_message_id']);

    const accountId = await defaultAccountId(app.db);
    assert.equal(await isSuppressed(app.db, accountId, 'ann@EXAMPLE.com'), true);
    assert.equal((await app.api.delete('/v1/suppressions/ann@example.com')).status, 200);
    assert.equal((await app.api.delete('/v1/suppressions/ann@example.com')).status, 404);
    assert.equal((await app.api.get('/v1/suppressions/ann@example.com')).status, 404);
    assert.equal(await isSuppressed(app.db, accountId, 'ann@example.com'), false);
  } finally {
    await app.stop();
  }
});

test('address validation accepts real mailboxes and says why others are refused', () => {
  for (const ok of ['a@example.com', 'first.last+tag@sub.example.co.uk', "o'neil@example.ie", 'x@xn--bcher-kva.example']) {
    assert.equal(checkEmail(ok).ok, true, ok);
  }
  const refused: Record<string, string> = {
    '': 'empty',
    'plain': 'missing @',
    '@example.com': 'missing the part before @',
    'a@': 'missing the domain',
    'a..b@example.com': 'the part before @ is not valid',
    '.a@example.com': 'the part before @ is not valid',
    'a@localhost': 'not a valid domain name',
    'a@example.123': 'not a valid domain name',
    'a@exa_mple.com': 'not a valid domain name',
    '"quoted"@example.com': 'contains spaces, quotes',
    'Name <a@example.com>': 'contains spaces, quotes',
    [`${'x'.repeat(65)}@example.com`]: 'longer than 64',
  };
  for (const [value, why] of Object.entries(refused)) {
    const r = checkEmail(value);
    assert.equal(r.ok, false, value);
    assert.ok(!r.ok && r.error.includes(why), `${value}: ${!r.ok && r.error}`);
  }
});
