// Every line break of a send's text and html is CRLF in the composed message, whatever the request used: the
// message is stored as the wire carries it, so the SMTP client's dot-stuffing stream passes it on without
// rewriting it, and the DKIM signer can hash the stored body's bytes (delivery/dkim-canon.ts). Not covered: an
// attached message (message/rfc822, sent 7bit) keeps its own bytes; the data stream still rewrites those.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import DataStream from 'nodemailer/lib/smtp-connection/data-stream';
import { composeMime, crlfLines, type MimeInput } from '../../src/messages/mime';
import { mimeInput } from './mime-input';

const base = mimeInput;

const BARE = /\r(?!\n)|(?<!\r)\n/;

/** What nodemailer's SMTP client writes after DATA for `raw`, less the final "." line. */
async function dotStuffed(raw: Buffer): Promise<Buffer> {
  const stream = new DataStream();
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (c: Buffer) => chunks.push(c));
  stream.pipe(out);
  stream.end(raw);
  await new Promise((resolve) => out.on('end', resolve));
  const all = Buffer.concat(chunks);
  return all.subarray(0, all.length - '.\r\n'.length);
}

test('crlfLines writes LF, CR and CRLF line breaks as CRLF and leaves the rest', () => {
  assert.equal(crlfLines('a\nb\rc\r\nd\n\n'), 'a\r\nb\r\nc\r\nd\r\n\r\n');
  assert.equal(crlfLines('no breaks'), 'no breaks');
  assert.equal(crlfLines(undefined), undefined);
});

const cases: Array<[string, Partial<MimeInput>]> = [
  ['7bit text', { text: 'Your order has shipped.\n'.repeat(40) }],
  ['quoted-printable text', { text: 'Grüße aus Köln,\nbis bald!\r'.repeat(20) }],
  ['long ASCII lines (quoted-printable)', { text: `${'a'.repeat(200)}\n`.repeat(3) }],
  ['base64 text', { text: 'Ваш заказ отправлен.\n'.repeat(20) }],
  ['html and text', { html: '<p>One</p>\n<p>Two</p>\r\n', text: 'One\nTwo\n' }],
  ['text with an attachment', { text: 'See the file.\n', attachments: [{ filename: 'a.txt', content: Buffer.from('x\ny\n') }] }],
];

for (const [name, input] of cases) {
  test(`${name}: no bare CR or LF, and the SMTP data stream sends the bytes unchanged`, async () => {
    const raw = await composeMime({ ...base, ...input });
    const text = raw.toString('latin1');
    assert.doesNotMatch(text, BARE);
    assert.ok(raw.subarray(-2).equals(Buffer.from('\r\n')), 'ends with a line break');
    assert.ok((await dotStuffed(raw)).equals(raw), 'rewritten by the data stream');
  });
}

test('a 7bit text keeps its lines, each ended by CRLF', async () => {
  const raw = (await composeMime({ ...base, text: 'one\ntwo\rthree\r\n' })).toString('latin1');
  assert.ok(raw.endsWith('\r\n\r\none\r\ntwo\r\nthree\r\n'), JSON.stringify(raw.slice(-40)));
});
