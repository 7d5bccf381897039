/** The message routes the console needs: content, retry now, search; and GET /v1/overview. Real sink, fake clock. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink';
import { liveApi, type ApiClient } from '../support/app';
import { messageRow, pointMx, SENDER_DOMAIN, startWorld, type World } from '../delivery/world';

describe('console message routes', () => {
  let sink: SmtpSink;
  let world: World;
  let api: ApiClient;
  before(async () => {
    // grey@ is deferred at its first attempt, slow@ at every attempt; everyone else is accepted.
    const deferred = (rcpt = '', attempt = 0) => rcpt === 'slow@dest.test' || (rcpt === 'grey@dest.test' && attempt === 1);
    sink = await startSmtpSink({ host: '127.0.0.2', reply: (ctx) => (ctx.stage === 'rcpt' && deferred(ctx.rcpt, ctx.attempt) ? { code: 451, message: '4.7.1 greylisted' } : undefined) });
    world = await startWorld({ port: sink.port });
    pointMx(world.dns, 'dest.test', [{ name: 'mx.dest.test', address: '127.0.0.2' }]);
    api = await liveApi(world.app);
  });
  after(async () => {
    await world.stop();
    await sink.close();
  });

  const send = async (body: Record<string, unknown>) => {
    const res = await api.post('/v1/messages/send', { from: `App <app@${SENDER_DOMAIN}>`, subject: 'Hello', text: 'plain', ...body });
    assert.equal(res.status, 202, res.text);
    return res.body.data[0].id as string;
  };

  test('content: subject, HTML, text and header fields of the stored message; another mode does not find it', async () => {
    const id = await send({ to: ['ann@dest.test'], subject: 'Your invoice #42', html: '<p>Hi <b>Ann</b></p>', text: 'Hi Ann' });
    const res = await api.get(`/v1/messages/${id}/content`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.subject, 'Your invoice #42');
    assert.match(res.body.html, /<p>Hi <b>Ann<\/b><\/p>/);
    assert.match(res.body.text, /Hi Ann/);
    const names = res.body.headers.map((h: { name: string }) => h.name.toLowerCase());
    for (const name of ['from', 'to', 'subject', 'message-id']) assert.ok(names.includes(name), name);
    assert.equal(res.body.headers.find((h: { name: string }) => h.name.toLowerCase() === 'to').value, 'ann@dest.test');
    assert.equal(res.body.truncated, false);
    assert.equal((await world.app.api.get(`/v1/messages/${id}/content`)).status, 404, 'the sandbox key does not see a live message');
    assert.equal((await api.get('/v1/messages/msg_nope/content')).status, 404);
  });

  test('retry: a deferred message is due now and delivered without waiting; anything else is 409', async () => {
    const id = await send({ to: ['grey@dest.test'] });
    await world.mta.runOnce();
    assert.equal((await messageRow(world, id)).status, 'deferred');
    assert.ok(Number((await messageRow(world, id)).next_attempt_at) > world.clock.now(), 'the retry is scheduled later');

    const res = await api.post(`/v1/messages/${id}/retry`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'deferred');
    assert.equal(Number((await messageRow(world, id)).next_attempt_at), world.clock.now());
    await world.mta.runOnce(); // the clock has not moved
    assert.equal((await messageRow(world, id)).status, 'delivered');

    const again = await api.post(`/v1/messages/${id}/retry`);
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, 'message_not_retryable');
    assert.equal((await api.post('/v1/messages/msg_nope/retry')).status, 404);
  });

  test('q searches subject, recipient and sender, case-insensitively, with % and _ taken literally', async () => {
    await send({ to: ['bob@dest.test'], subject: 'Password RESET for Bob' });
    await send({ to: ['carol@dest.test'], subject: '100% off_today' });
    const search = async (q: string) => (await api.get(`/v1/messages?q=${encodeURIComponent(q)}`)).body;
    const bySubject = await search('password reset');
    assert.deepEqual(bySubject.data.map((m: { to: { email: string } }) => m.to.email), ['bob@dest.test']);
    assert.equal(bySubject.pagination.total, 1);
    assert.deepEqual((await search('CAROL@')).data.map((m: { subject: string }) => m.subject), ['100% off_today']);
    assert.equal((await search('0%')).data.length, 1);
    assert.equal((await search('%')).data.length, 1, '% is a character, not a wildcard');
    assert.equal((await search('o_f')).data.length, 0, '_ is a character, not a wildcard');
    assert.ok((await search(`app@${SENDER_DOMAIN}`)).data.length >= 2, 'by sender');
    assert.equal((await api.get(`/v1/messages?q=${'x'.repeat(201)}`)).status, 400, 'bounded');
  });

  test('overview: counts from the rollups, the queue, deferred destinations and alerts', async () => {
    await send({ to: ['slow@dest.test', 'dan@dest.test'] });
    await world.mta.runOnce();
    await world.app.db('domains').where({ name: SENDER_DOMAIN }).update({ status: 'failing', failing_since: world.clock.now() });
    const res = await api.get('/v1/overview');
    assert.equal(res.status, 200, res.text);
    const o = res.body;
    assert.equal(o.daily.length, 30);
    assert.equal(o.daily[29].date, new Date(world.clock.now()).toISOString().slice(0, 10));
    assert.deepEqual(o.today, { ...o.daily[29], date: undefined, ...o.today });
    assert.ok(o.today.sent >= 4, `sent today ${o.today.sent}`);
    assert.ok(o.today.delivered >= 3, `delivered today ${o.today.delivered}`);
    assert.equal(o.last_30_days.sent, o.daily.reduce((n: number, d: { sent: number }) => n + d.sent, 0));
    assert.deepEqual(o.queue, { queued: 0, deferred: 1, scheduled: 0 });
    assert.deepEqual(o.deferred_by_destination, [{ domain: 'dest.test', count: 1 }]);
    assert.ok(Array.isArray(o.warmup));
    assert.ok(o.alerts.some((a: { kind: string; subject: string }) => a.kind === 'domain_dns' && a.subject === SENDER_DOMAIN), JSON.stringify(o.alerts));
    const sandbox = (await world.app.api.get('/v1/overview')).body;
    assert.equal(sandbox.today.sent, 0, 'the sandbox mode counts its own messages only');
  });
});
