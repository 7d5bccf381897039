/**
 * Template values nested thousands of levels deep: JSON.parse accepts them,
 * but the idempotency hash and Handlebars walked them recursively, so with an
 * Idempotency-Key the send was a 500 (stack overflow) and without one a 422
 * quoting the engine's "Maximum call stack size exceeded". They are now
 * refused at validation, naming the value.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, TestApp } from '../support/app';
import { requestHash } from '../../src/messages/idempotency';
import { compileAll } from '../../src/messages/render';
import { CompilePool } from '../../src/messages/compile-pool';
import { RenderBudget } from '../../src/messages/render-budget';
import { ApiError } from '../../src/http/errors';
import { counts, pauseDelivery, simpleSend } from './helpers';

let app: TestApp;
before(async () => {
  app = await startTestApp();
  await pauseDelivery(app); // rows are counted
});
after(() => app.stop());

const arrayJson = (n: number) => '['.repeat(n) + '1' + ']'.repeat(n);
const objectJson = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
const deepArray = (n: number): unknown => JSON.parse(arrayJson(n));
const deepObject = (n: number): unknown => JSON.parse(objectJson(n));
/** The request body as JSON text with `deep` in place of the value "DEEP" (JSON.stringify itself overflows on it). */
const withDeep = (body: Record<string, unknown>, deep: string) => JSON.stringify(body).replace('"DEEP"', deep);

async function assertTooDeep(body: string, param: string, headers: Record<string, string> = {}) {
  const before = await counts(app);
  const res = await app.api.post('/v1/messages/send', body, headers);
  assert.equal(res.status, 422, res.text);
  assert.equal(res.body.error.param, param);
  assert.match(res.body.error.message, /nested more than 32 arrays or objects deep/);
  assert.doesNotMatch(res.text, /call stack|RangeError|\bat .*\.js:\d+/);
  assert.deepEqual(await counts(app), before, 'nothing stored, the Idempotency-Key released');
}

test('template_data.d nesting arrays 20000 deep with an Idempotency-Key is refused with 422 on template_data.d, not a 500', async () => {
  const body = withDeep(simpleSend({ text: '{{d}}', template_data: { d: 'DEEP' } }), arrayJson(20_000));
  await assertTooDeep(body, 'template_data.d', { 'Idempotency-Key': 'k1' });
  await assertTooDeep(body, 'template_data.d');
});

test('a substitution nesting objects 20000 deep is refused with 422 on to[0].substitutions.d', async () => {
  const to = [{ email: 'r@example.org', substitutions: { d: 'DEEP' } }];
  await assertTooDeep(withDeep(simpleSend({ to, text: '{{d.a}}' }), objectJson(20_000)), 'to[0].substitutions.d', { 'Idempotency-Key': 'k2' });
});

test('template data nested 32 deep is accepted and 33 deep refused', async () => {
  const ok = await app.api.post('/v1/messages/send', simpleSend({ text: '{{d}}', template_data: { d: deepArray(32) } }), { 'Idempotency-Key': 'k3' });
  assert.equal(ok.status, 202, ok.text);
  await assertTooDeep(JSON.stringify(simpleSend({ text: '{{d}}', template_data: { d: deepArray(33) } })), 'template_data.d');
});

test('the idempotency hash of a body nested 20000 deep is computed without overflowing the stack', () => {
  assert.equal(requestHash({ d: deepArray(20_000) }), requestHash({ d: deepArray(20_000) }));
  assert.notEqual(requestHash({ d: deepArray(20_000) }), requestHash({ d: deepObject(20_000) }));
  assert.equal(requestHash({ b: 1, a: [1, { y: 2, x: undefined }] }), requestHash({ a: [1, { y: 2 }], b: 1 }), 'key order and undefined do not matter');
});

test('a render that overflows the stack answers 422 template_error without the engine message', async () => {
  const pool = new CompilePool(); // a small source compiles inline: no thread starts
  const { text: render } = await compileAll({ text: '{{d}}' }, { templateSourceBytes: 1024, templateNestingDepth: 24 }, { pool, account: 'test' });
  assert.ok(render);
  assert.throws(() => render({ d: deepArray(20_000) }, new RenderBudget(1_000_000)), (err: ApiError) => {
    assert.equal(err.status, 422);
    assert.equal(err.code, 'template_error');
    assert.equal(err.message, 'text template: could not be rendered with this data');
    return true;
  });
  await pool.stop();
});
