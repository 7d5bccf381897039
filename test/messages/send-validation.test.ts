import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, TestApp } from '../support/app';
import { counts, simpleSend } from './helpers';

const MAX_BYTES = 50_000;

interface BadCase {
  name: string;
  body: Record<string, unknown> | string;
  status: number;
  param?: string;
  code?: string;
  contentType?: string;
}

const send = simpleSend;
const without = (key: string) => {
  const b: Record<string, unknown> = send();
  delete b[key];
  return b;
};
const addresses = (n: number, domain: string) => Array.from({ length: n }, (_, i) => `r${i}@${domain}`);
const b64 = (bytes: number) => Buffer.alloc(bytes, 7).toString('base64');

const CASES: BadCase[] = [
  { name: 'from missing', body: without('from'), status: 422, param: 'from' },
  { name: 'from not an address', body: send({ from: 'not-an-address' }), status: 422, param: 'from', code: 'invalid_address' },
  { name: 'from with two addresses', body: send({ from: 'a@example.com, b@example.com' }), status: 422, param: 'from' },
  { name: 'from object with a bad email', body: send({ from: { email: 'nobody@', name: 'X' } }), status: 422, param: 'from.email' },
  { name: 'from name with CRLF (header injection)', body: send({ from: { email: 'a@example.com', name: 'A\r\nBcc: evil@example.net' } }), status: 422, param: 'from.name', code: 'header_injection' },
  { name: 'to missing', body: without('to'), status: 422, param: 'to' },
  { name: 'to empty array', body: send({ to: [] }), status: 422, param: 'to' },
  { name: 'to[3].email malformed', body: send({ to: ['a@example.org', 'b@example.org', 'c@example.org', { email: 'd@@example.org' }] }), status: 422, param: 'to[3].email' },
  { name: 'to entry is a number', body: send({ to: ['a@example.org', 5] }), status: 422, param: 'to[1]' },
  { name: 'to entry with unknown field', body: send({ to: [{ email: 'a@example.org', nickname: 'x' }] }), status: 422, param: 'to[0].nickname' },
  { name: 'to string with CRLF and a Bcc line', body: send({ to: ['Bob\r\nBcc: evil@example.net <bob@example.org>'] }), status: 422, param: 'to[0]', code: 'header_injection' },
  { name: 'to local part with double dot', body: send({ to: ['a..b@example.org'] }), status: 422, param: 'to[0]', code: 'invalid_address' },
  { name: 'to domain with a bad label', body: send({ to: ['a@-bad-.example.org'] }), status: 422, param: 'to[0]' },
  { name: 'to domain is an IP literal', body: send({ to: ['a@[127.0.0.1]'] }), status: 422, param: 'to[0]' },
  { name: 'to domain without a dot', body: send({ to: ['a@localhost'] }), status: 422, param: 'to[0]' },
  { name: 'more than 50 in to', body: send({ to: addresses(51, 'example.org') }), status: 422, param: 'to' },
  { name: 'more than 50 over to+cc+bcc', body: send({ to: addresses(30, 'example.org'), cc: addresses(15, 'example.net'), bcc: addresses(6, 'example.com') }), status: 422, param: 'bcc[5]', code: 'too_many_recipients' },
  { name: 'same address in to and cc', body: send({ to: ['dup@example.org'], cc: ['DUP@example.org'] }), status: 422, param: 'cc[0]', code: 'duplicate_recipient' },
  { name: 'cc together with substitutions', body: send({ to: [{ email: 'a@example.org', substitutions: { n: 1 } }], cc: ['c@example.org'] }), status: 422, param: 'cc', code: 'substitutions_with_cc' },
  { name: 'bcc together with substitutions', body: send({ to: [{ email: 'a@example.org', substitutions: { n: 1 } }], bcc: ['c@example.org'] }), status: 422, param: 'bcc' },
  { name: 'reply_to malformed', body: send({ reply_to: 'nope' }), status: 422, param: 'reply_to' },
  { name: 'subject with CRLF (header injection)', body: send({ subject: 'Hi\r\nBcc: evil@example.net' }), status: 422, param: 'subject', code: 'header_injection' },
  { name: 'subject with a bare LF', body: send({ subject: 'Hi\nX-Evil: 1' }), status: 422, param: 'subject', code: 'header_injection' },
  { name: 'substitution puts a line break in the subject', body: send({ subject: 'Hi {{n}}', to: [{ email: 'a@example.org', substitutions: { n: 'x\r\nBcc: evil@example.net' } }] }), status: 422, param: 'to[0].substitutions', code: 'header_injection' },
  { name: 'template_data puts a line break in the subject', body: send({ subject: 'Hi {{n}}', template_data: { n: 'x\nBcc: e@example.net' } }), status: 422, param: 'template_data' },
  { name: 'subject missing', body: without('subject'), status: 422, param: 'subject', code: 'missing_subject' },
  { name: 'neither html nor text', body: send({ text: undefined }), status: 422, param: 'html', code: 'missing_body' },
  { name: 'custom header value with LF', body: send({ headers: { 'X-Campaign': 'a\nBcc: evil@example.net' } }), status: 422, param: 'headers.X-Campaign', code: 'header_injection' },
  { name: 'reserved header From', body: send({ headers: { From: 'x@example.com' } }), status: 422, param: 'headers.From', code: 'reserved_header' },
  { name: 'reserved header bcc (any case)', body: send({ headers: { bcc: 'x@example.com' } }), status: 422, param: 'headers.bcc', code: 'reserved_header' },
  { name: 'reserved header Content-Type', body: send({ headers: { 'Content-Type': 'text/html' } }), status: 422, param: 'headers.Content-Type', code: 'reserved_header' },
  { name: 'reserved header DKIM-Signature', body: send({ headers: { 'DKIM-Signature': 'v=1' } }), status: 422, param: 'headers.DKIM-Signature', code: 'reserved_header' },
  { name: 'X-Pigeon control header through the API', body: send({ headers: { 'X-Pigeon-Tags': 'a' } }), status: 422, param: 'headers.X-Pigeon-Tags', code: 'reserved_header' },
  { name: 'reserved header Return-Path', body: send({ headers: { 'Return-Path': '<x@example.com>' } }), status: 422, param: 'headers.Return-Path' },
  { name: 'header name with a space', body: send({ headers: { 'X Bad': '1' } }), status: 422, param: 'headers.X Bad', code: 'invalid_header_name' },
  { name: 'header value not a string', body: send({ headers: { 'X-N': 5 } }), status: 422, param: 'headers.X-N' },
  { name: 'attachment with invalid base64', body: send({ attachments: [{ filename: 'a.txt', content: 'not base64!!' }] }), status: 422, param: 'attachments[0].content', code: 'invalid_base64' },
  { name: 'attachment without filename', body: send({ attachments: [{ content: 'aGk=' }] }), status: 422, param: 'attachments[0].filename' },
  { name: 'attachment filename with CRLF', body: send({ attachments: [{ filename: 'a\r\n.txt', content: 'aGk=' }] }), status: 422, param: 'attachments[0].filename' },
  { name: 'attachment content_type malformed', body: send({ attachments: [{ filename: 'a.txt', content: 'aGk=', content_type: 'text' }] }), status: 422, param: 'attachments[0].content_type' },
  { name: 'send_at beyond 72 hours', body: send({ send_at: '2099-01-01T00:00:00Z' }), status: 422, param: 'send_at', code: 'send_at_too_far' },
  { name: 'send_at without a time zone', body: send({ send_at: '2026-01-05T10:00:00' }), status: 422, param: 'send_at' },
  { name: 'unknown top-level field', body: send({ sender_name: 'x' }), status: 422, param: 'sender_name' },
  { name: 'too many tags', body: send({ tags: Array.from({ length: 11 }, (_, i) => `t${i}`) }), status: 422, param: 'tags' },
  { name: 'tag with a quote', body: send({ tags: ['a"b'] }), status: 422, param: 'tags[0]' },
  { name: 'metadata value not a string', body: send({ metadata: { order: 5 } }), status: 422, param: 'metadata.order' },
  { name: 'unknown ip_pool', body: send({ ip_pool: 'nope' }), status: 422, param: 'ip_pool', code: 'unknown_ip_pool' },
  { name: 'html template syntax error', body: send({ html: '<p>{{#if}}</p>' }), status: 422, param: 'html', code: 'template_error' },
  { name: 'unknown helper in subject', body: send({ subject: '{{shout name}}' }), status: 422, param: 'subject', code: 'template_error' },
  { name: 'nested loops in text beyond the iteration budget', body: send({ text: '{{#each a}}{{#each ../a}}{{#each ../../a}}x{{/each}}{{/each}}{{/each}}', template_data: { a: Array.from({ length: 150 }, (_, i) => i) } }), status: 422, param: 'text', code: 'template_error' },
  { name: 'partial in text', body: send({ text: '{{> footer}}' }), status: 422, param: 'text', code: 'template_error' },
  { name: 'template_id unknown', body: { ...without('subject'), text: undefined, template_id: 'tpl_missing' }, status: 422, param: 'template_id', code: 'template_not_found' },
  { name: 'template_id together with subject', body: send({ template_id: 'tpl_x', text: undefined }), status: 422, param: 'subject', code: 'template_conflict' },
  { name: 'built MIME above the size limit', body: send({ attachments: [{ filename: 'big.bin', content: b64(MAX_BYTES) }] }), status: 413, code: 'message_too_large' },
  { name: 'request body above the body limit', body: send({ text: 'x'.repeat(Math.round(MAX_BYTES * 1.4) + 70_000) }), status: 413, code: 'payload_too_large' },
  { name: 'malformed JSON', body: '{"from": ', status: 400, code: 'malformed_body' },
  { name: 'wrong content type', body: 'from=a', status: 415, contentType: 'application/x-www-form-urlencoded' },
];

let app: TestApp;
before(async () => {
  app = await startTestApp({ limits: { maxMessageBytes: MAX_BYTES } });
});
after(() => app.stop());

test(`the send API refuses ${CASES.length} bad payloads, each naming its field, storing nothing`, async () => {
  assert.ok(CASES.length >= 30);
  for (const c of CASES) {
    const before = await counts(app);
    const headers = c.contentType ? { 'content-type': c.contentType } : undefined;
    const res = await app.api.post('/v1/messages/send', typeof c.body === 'string' ? c.body : c.body, headers);
    assert.equal(res.status, c.status, `${c.name}: status ${res.status} ${res.text}`);
    assert.ok(res.body?.error, `${c.name}: error shape`);
    if (c.param !== undefined) assert.equal(res.body.error.param, c.param, `${c.name}: param in ${res.text}`);
    if (c.code !== undefined) assert.equal(res.body.error.code, c.code, `${c.name}: code in ${res.text}`);
    assert.doesNotMatch(res.text, /at .*\.js:\d+|sqlite|knex/i, `${c.name}: no internals in the answer`);
    assert.deepEqual(await counts(app), before, `${c.name}: nothing stored`);
  }
});

test('a valid payload on the same app is accepted, so the table above tests the faults and not the setup', async () => {
  const res = await app.api.post('/v1/messages/send', send({ headers: { 'X-Campaign': 'spring' }, attachments: [{ filename: 'a.txt', content: 'aGk=' }] }));
  assert.equal(res.status, 202, res.text);
});

test('an injected Bcc line never reaches the stored headers of an accepted message', async () => {
  const res = await app.api.post('/v1/messages/send', send({ subject: 'Hello {{name}}', template_data: { name: 'Bob Bcc: evil@example.net' } }));
  assert.equal(res.status, 202, res.text);
  const row = await app.db('messages').where({ id: res.body.data[0].id }).first();
  const content = await app.db('message_contents').where({ id: row.content_id }).first();
  const header = content.raw.toString('latin1').split('\r\n\r\n')[0];
  assert.doesNotMatch(header, /^bcc:/im);
  assert.match(header, /^Subject: Hello Bob Bcc: evil@example\.net$/m);
});
