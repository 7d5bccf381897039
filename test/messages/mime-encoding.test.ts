// The transfer encoding the composer picks for a send's texts: 7bit for short-lined ASCII, quoted-printable while
// most characters are ASCII, base64 once most are not; header words follow the same choice.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { composeMime, type MimeInput } from '../../src/messages/mime';
import { mimeInput } from './mime-input';

const base = mimeInput;

async function encodingOf(input: Partial<MimeInput>): Promise<{ body: string; head: string }> {
  const raw = (await composeMime({ ...base, ...input })).toString('latin1');
  const head = raw.slice(0, raw.indexOf('\r\n\r\n'));
  const body = /^Content-Transfer-Encoding: (.+)$/im.exec(head)?.[1] ?? '';
  return { body, head };
}

test('short-lined ASCII text goes as 7bit', async () => {
  assert.equal((await encodingOf({ text: 'Your order has shipped.\n'.repeat(50) })).body, '7bit');
});

test('ASCII text with lines over 76 characters goes quoted-printable', async () => {
  assert.equal((await encodingOf({ text: `${'a'.repeat(200)}\n` })).body, 'quoted-printable');
});

test('text mostly ASCII with some other letters goes quoted-printable', async () => {
  assert.equal((await encodingOf({ text: 'Grüße aus Köln, bis bald!\n'.repeat(20) })).body, 'quoted-printable');
});

test('text mostly of other letters goes base64, and so does a subject word', async () => {
  const { body, head } = await encodingOf({ subject: 'Заказ', text: 'Ваш заказ отправлен.\n'.repeat(20) });
  assert.equal(body, 'base64');
  assert.match(head, /^Subject: =\?UTF-8\?B\?/m);
});

test('a non-ASCII subject over an ASCII body is Q-encoded, as the body decides', async () => {
  const { body, head } = await encodingOf({ subject: 'Заказ', text: 'Your order has shipped and will arrive soon.\n'.repeat(20) });
  assert.equal(body, '7bit');
  assert.match(head, /^Subject: =\?UTF-8\?Q\?/m);
});
