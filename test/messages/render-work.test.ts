/**
 * Templates that do a lot of work and produce no output: loops around empty
 * blocks and look-up chains once held the event loop for seconds (10 s for the
 * first reproduction below) before the loop-turn bound stopped them. Each is
 * now refused with 422 template_error once its work passes the send's budget,
 * and the longest gap of a 10 ms timer stays well under the seconds they took.
 * Ordinary large loops (an invoice table) still send.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, TestApp } from '../support/app';
import { counts, pauseDelivery, simpleSend, withLoopWatch } from './helpers';

let app: TestApp;
before(async () => {
  app = await startTestApp();
  await pauseDelivery(app); // rows are counted
});
after(() => app.stop());

const emptyIfs = '{{#each a}}' + '{{#if x}}{{/if}}'.repeat(320) + '{{/each}}';
const lookupChains = '{{#each a}}' + '{{#if (lookup (lookup (lookup a b) c) d)}}{{/if}}'.repeat(100) + '{{/each}}';
const turns = { a: Array(20_000).fill(0) };

/**
 * Sends `body` once with an empty loop, so its templates are compiled and
 * cached (compiling is bounded elsewhere), then with 20,000 turns.
 */
async function assertTooExpensive(body: Record<string, unknown>, param: string) {
  const warm = await app.api.post('/v1/messages/send', { ...body, template_data: { a: [] } });
  assert.equal(warm.status, 202, warm.text);
  const before = await counts(app);
  const { result: res, maxGapMs } = await withLoopWatch(() => app.api.post('/v1/messages/send', body));
  assert.equal(res.status, 422, res.text);
  assert.equal(res.body.error.code, 'template_error');
  assert.equal(res.body.error.param, param);
  assert.match(res.body.error.message, /too expensive to render/);
  // The step budget stops these in about 50 ms of CPU; the bound leaves room for a loaded machine and the
  // 1 s render deadline, and still separates them from the 10 s they blocked for before.
  assert.ok(maxGapMs < 2000, `the event loop stalled for ${Math.round(maxGapMs)} ms`);
  assert.deepEqual(await counts(app), before, 'nothing stored');
  assert.equal((await app.api.get('/healthz')).status, 200);
}

test('a send looping 20000 times around 320 empty {{#if}} for 3 recipients is refused with 422 and the event loop keeps ticking', async () => {
  const to = [0, 1, 2].map((i) => ({ email: `r${i}@example.org`, substitutions: { z: i } }));
  await assertTooExpensive(simpleSend({ to, text: `${emptyIfs}t`, html: `${emptyIfs}h`, template_data: turns }), 'html');
});

test('a text-only send to one recipient looping 20000 times around 320 empty {{#if}} is refused with 422', async () => {
  await assertTooExpensive(simpleSend({ text: emptyIfs, template_data: turns }), 'text');
});

test('a loop of 20000 turns around 100 {{#if (lookup (lookup (lookup a b) c) d)}} is refused with 422', async () => {
  await assertTooExpensive(simpleSend({ text: lookupChains, template_data: turns }), 'text');
});

test('a 200-row invoice table of 20 fields in html and text, one copy per recipient for 5 recipients, is accepted', async () => {
  const fields = Array.from({ length: 20 }, (_, i) => `f${i}`);
  const html = `<table>{{#each rows}}<tr>${fields.map((f) => `<td>{{${f}}}</td>`).join('')}</tr>{{/each}}</table>`;
  const text = `{{#each rows}}${fields.map((f) => `{{${f}}}`).join(' ')}\n{{/each}}`;
  const rows = Array.from({ length: 200 }, (_, r) => Object.fromEntries(fields.map((f) => [f, `${f}-${r}`])));
  const to = Array.from({ length: 5 }, (_, i) => ({ email: `r${i}@example.org`, substitutions: { n: i } }));
  const res = await app.api.post('/v1/messages/send', simpleSend({ to, html, text, template_data: { rows } }));
  assert.equal(res.status, 202, res.text);
  assert.equal(res.body.data.length, 5);
});
