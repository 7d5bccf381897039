/**
 * Template bombs: sources that made Handlebars block the event loop for
 * seconds, or render output that ran the heap out, are refused with a 422 or
 * 413 naming the field while the appliance keeps answering. The event loop is
 * watched by a 10 ms interval timer in this process (the app runs here too):
 * its longest gap while a bomb is in flight must stay under a second, where
 * the same requests used to block for 20 s or kill the process.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createKey, startTestApp, TestApp, ApiClient } from '../support/app';
import { counts, pauseDelivery, simpleSend, withLoopWatch } from './helpers';

let app: TestApp;
let live: ApiClient;
before(async () => {
  app = await startTestApp({ limits: { templatesPerAccount: 3 } });
  await pauseDelivery(app); // rows are counted: accepted sends must not gain events while a test looks
  live = app.api.withKey(await createKey(app, 'live', ['messages:send']));
});
after(() => app.stop());

const nestedIfs = (n: number) => '{{#if a}}'.repeat(n) + 'x' + '{{/if}}'.repeat(n);
const MB = 'x'.repeat(1024 * 1024);

async function assertRefused(client: ApiClient, path: string, body: unknown, status: number, param: string, code?: string) {
  const before = await counts(app);
  const { result: res, maxGapMs } = await withLoopWatch(() => client.post(path, body));
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.error.param, param);
  if (code) assert.equal(res.body.error.code, code);
  assert.doesNotMatch(res.text, /\bat .*\.js:\d+/, 'no stack trace in the answer');
  assert.ok(maxGapMs < 1000, `the event loop stalled for ${Math.round(maxGapMs)} ms`);
  assert.deepEqual(await counts(app), before, 'nothing stored');
  assert.equal((await app.api.get('/healthz')).status, 200);
  return res;
}

test('a send whose text nests {{#if}} 6000 deep is refused with 422 on text and /healthz keeps answering', async () => {
  const res = await assertRefused(app.api, '/v1/messages/send', simpleSend({ text: nestedIfs(6000) }), 422, 'text', 'template_too_deep');
  assert.match(res.body.error.message, /limit is 24/);
});

test('a send whose text nests {{#if}} 20000 deep is refused with 422 on text and /healthz keeps answering', async () => {
  await assertRefused(app.api, '/v1/messages/send', simpleSend({ text: nestedIfs(20_000) }), 422, 'text', 'template_too_deep');
});

test('a send of {{a}} 300 times with a 1 MB template_data.a is refused with 413 on text without running the heap out', async () => {
  const res = await assertRefused(app.api, '/v1/messages/send', simpleSend({ text: '{{a}}'.repeat(300), template_data: { a: MB } }), 413, 'text', 'message_too_large');
  assert.match(res.body.error.message, /10485760/);
});

test('the same 1 MB value repeated in html, escaped and triple-stashed, is refused with 413 on html', async () => {
  await assertRefused(app.api, '/v1/messages/send', simpleSend({ html: '{{a}}{{{a}}}'.repeat(150), template_data: { a: MB } }), 413, 'html', 'message_too_large');
  const loop = { html: '{{#each items}}{{{../a}}}{{/each}}', template_data: { a: MB, items: Array.from({ length: 300 }, (_, i) => i) } };
  await assertRefused(app.api, '/v1/messages/send', simpleSend(loop), 413, 'html', 'message_too_large');
});

test('ten per-recipient copies of 6 MB each add up past the send budget: 413 before any MIME is built', async () => {
  const to = Array.from({ length: 10 }, (_, i) => ({ email: `r${i}@example.org`, substitutions: { n: i } }));
  await assertRefused(app.api, '/v1/messages/send', simpleSend({ to, text: '{{a}}'.repeat(6), template_data: { a: MB } }), 413, 'text', 'message_too_large');
});

test('a send with 100000 {{a}} in its text is refused with 422 before compiling', async () => {
  await assertRefused(app.api, '/v1/messages/send', simpleSend({ text: '{{a}}'.repeat(100_000) }), 422, 'text', 'template_too_complex');
});

test('a subject nesting sub-expressions 30 deep is refused with 422 on subject', async () => {
  const subject = `{{lookup a ${'(lookup a '.repeat(30)}${')'.repeat(30)}}}`;
  await assertRefused(app.api, '/v1/messages/send', simpleSend({ subject }), 422, 'subject', 'template_too_deep');
});

test('an {{else if}} chain 1000 long is refused with 422: each link nests one level', async () => {
  const text = `{{#if a}}x${'{{else if a}}x'.repeat(1000)}{{/if}}`;
  await assertRefused(app.api, '/v1/messages/send', simpleSend({ text }), 422, 'text', 'template_too_deep');
});

test('a template of 6000 nested {{#if}} is refused by POST /v1/templates with 422 on html', async () => {
  await assertRefused(live, '/v1/templates', { name: 'bomb', subject: 's', html: nestedIfs(6000) }, 422, 'html', 'template_too_deep');
  await assertRefused(live, '/v1/templates', { name: 'bomb', subject: 's', text: nestedIfs(20_000) }, 422, 'text', 'template_too_deep');
});

test('a stored template of {{a}} 300 times, sent with a 1 MB value, is refused with 413 on template_id', async () => {
  const created = await live.post('/v1/templates', { name: 'repeat', subject: 'Hi', text: '{{a}}'.repeat(300) });
  assert.equal(created.status, 201, created.text);
  const body = { from: 'sender@example.com', to: ['rcpt@example.org'], template_id: created.body.id, template_data: { a: MB } };
  await assertRefused(app.api, '/v1/messages/send', body, 413, 'template_id', 'message_too_large');
  assert.equal((await live.delete(`/v1/templates/${created.body.id}`)).status, 200);
});

test('a template over the 512 KiB source limit is refused with 422 template_too_large, stored or inline', async () => {
  const big = `{{name}}${'y'.repeat(512 * 1024 + 1)}`;
  const res = await assertRefused(live, '/v1/templates', { name: 'big', subject: 's', text: big }, 422, 'text', 'template_too_large');
  assert.match(res.body.error.message, /524288/);
  await assertRefused(app.api, '/v1/messages/send', simpleSend({ html: big }), 422, 'html', 'template_too_large');
});

test('a body over the template source limit without {{ is no template: it is sent, bounded by the message size only', async () => {
  const plain = 'y'.repeat(600 * 1024);
  const res = await app.api.post('/v1/messages/send', simpleSend({ text: plain }));
  assert.equal(res.status, 202, res.text);
});

test('partials and {{#*inline}} decorators are refused: templates cannot define or call partials', async () => {
  const text = '{{#*inline "p"}}{{> p}}{{> p}}{{/inline}}{{> p}}';
  await assertRefused(app.api, '/v1/messages/send', simpleSend({ text }), 422, 'text', 'template_error');
});

test('creating a 4th template when the account may have 3 is refused with 409 limit_reached naming the cap', async () => {
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await live.post('/v1/templates', { name: `t${i}`, subject: 's', text: 't' });
    assert.equal(res.status, 201, res.text);
    ids.push(res.body.id);
  }
  const over = await live.post('/v1/templates', { name: 't3', subject: 's', text: 't' });
  assert.equal(over.status, 409, over.text);
  assert.equal(over.body.error.type, 'conflict_error');
  assert.equal(over.body.error.code, 'limit_reached');
  assert.match(over.body.error.message, /at most 3 templates/);
  assert.equal((await live.get('/v1/templates')).body.data.length, 3, 'nothing stored');
  assert.equal((await live.delete(`/v1/templates/${ids[0]}`)).status, 200);
  assert.equal((await live.post('/v1/templates', { name: 't3', subject: 's', text: 't' })).status, 201, 'deleting one makes room');
  for (const t of (await live.get('/v1/templates')).body.data) await live.delete(`/v1/templates/${t.id}`);
});

test('a sandbox key creating or deleting a template gets 403 live_key_required; it may still read and send with them', async () => {
  const denied = await app.api.post('/v1/templates', { name: 'sandbox', subject: 's', text: 't' });
  assert.equal(denied.status, 403, denied.text);
  assert.equal(denied.body.error.code, 'live_key_required');
  const created = await live.post('/v1/templates', { name: 'shared', subject: 'Hi {{n}}', text: 'Hello {{n}}' });
  assert.equal(created.status, 201, created.text);
  const del = await app.api.delete(`/v1/templates/${created.body.id}`);
  assert.equal(del.status, 403, del.text);
  assert.equal(del.body.error.code, 'live_key_required');
  assert.equal((await app.api.get(`/v1/templates/${created.body.id}`)).status, 200);
  const sent = await app.api.post('/v1/messages/send', { from: 'sender@example.com', to: ['rcpt@example.org'], template_id: created.body.id, template_data: { n: 'Ada' } });
  assert.equal(sent.status, 202, sent.text);
  assert.equal((await live.delete(`/v1/templates/${created.body.id}`)).status, 200);
});
