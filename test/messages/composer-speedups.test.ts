// The composer's three replaced helpers (src/messages/composer-speedups.ts) answer as nodemailer's own do, and a
// send's MIME built with them is byte for byte the one built with nodemailer's originals.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import mimeFuncs from 'nodemailer/lib/mime-funcs';
import MimeNode from 'nodemailer/lib/mime-node';
import { composeMime, type MimeInput } from '../../src/messages/mime';
import { hasLongerLines, isPlainText, originals, rememberingNormalizer } from '../../src/messages/composer-speedups';

const line = (n: number, c = 'a') => c.repeat(n);

const TEXTS = [
  '', 'short', line(76), line(77), line(200), `${line(76)}\n${line(76)}`, `${line(76)}\n${line(77)}`,
  `${line(76)}\n`, `\n${line(77)}`, `${line(40)}\r${line(40)}`, `${line(40)}\r\n${line(40)}`,
  `${line(60)}\r\n${line(77)}\r\n`, `${line(40)}\u2028${line(40)}`, `${line(40)}\u2029${line(40)}`,
  `${line(80)}\u2028`, `${line(77, 'é')}`, `${line(76, 'я')}\n${line(10)}`, '\n\n\n', '\r\r\r',
  `${'Your order has shipped and will arrive within two working days. Thank you!\n'.repeat(70)}`,
  `${line(128 * 1024)}`, `${line(128 * 1024 + 1)}`, `${'ok\n'.repeat(50_000)}`,
];

test('hasLongerLines answers as nodemailer\'s regex for every kind of line break and length', () => {
  for (const text of TEXTS) {
    for (const limit of [0, 1, 40, 76, 78]) {
      assert.equal(hasLongerLines(text, limit), originals.hasLongerLines(text, limit), `length ${text.length}, limit ${limit}: ${JSON.stringify(text.slice(0, 90))}`);
    }
  }
});

test('isPlainText answers as nodemailer\'s regex for every kind of letter, as a text and as a parameter', () => {
  const values: unknown[] = [
    ...TEXTS, 'tab\tand\r\nbreaks', 'del \x7f', 'nul \x00', 'esc \x1b', 'vt \x0b ff \x0c', 'us \x1f', 'quote "', 'latin-1 \xa0 é',
    'euro €', 'emoji 🎉', 'lone \ud800', 'lone \udfff', '\u0080', '\uffff', ` ${line(10_000)}\u0081`, undefined, null, 42, ['a'],
  ];
  for (const value of values) {
    for (const isParam of [false, true]) {
      assert.equal(isPlainText(value, isParam), originals.isPlainText(value, isParam), `${JSON.stringify(value)?.slice(0, 60)}, isParam ${isParam}`);
    }
  }
});

test('the remembered header-key normalizer answers as the original, also past its bound', () => {
  const normalize = rememberingNormalizer(originals.normalizeHeaderKey, 3);
  const keys = ['content-type', 'CONTENT-TYPE', 'x-smtpapi', 'mime-version', 'dkim-signature', 'message-id', 'x-custom-id',
    'list-unsubscribe-post', 'content-features', ' x-spaced ', 'x-line\r\nbreak', 'x-spf', 'x-md5', 'content-type'];
  for (const key of [...keys, ...keys]) assert.equal(normalize(key), originals.normalizeHeaderKey(key), key);
  for (const key of [undefined, null, 42]) assert.equal(normalize(key), originals.normalizeHeaderKey(key));
});

test('made-up header names past the bound do not keep a common one from being remembered', () => {
  let calls = 0;
  const counting = function (this: unknown, key: unknown) {
    calls++;
    return originals.normalizeHeaderKey.call(this, key);
  };
  const normalize = rememberingNormalizer(counting, 3);
  for (let i = 0; i < 10; i++) normalize(`x-made-up-${i}`);
  normalize('content-type');
  const before = calls;
  normalize('content-type');
  assert.equal(calls, before, 'content-type answered from memory');
});

test('the composer uses the replacements once the MIME builder is loaded', () => {
  assert.equal(mimeFuncs.hasLongerLines, hasLongerLines);
  assert.equal(mimeFuncs.isPlainText, isPlainText);
  assert.notEqual((MimeNode.prototype as unknown as { _normalizeHeaderKey: unknown })._normalizeHeaderKey, originals.normalizeHeaderKey);
});

const base: MimeInput = {
  from: { email: 'app@example.test', name: 'Shop', domain: 'example.test' },
  to: [{ email: 'user@example.test', name: null, domain: 'example.test' }, { email: 'b@xn--jgeva-dua.ee', name: 'Bö', domain: 'xn--jgeva-dua.ee' }],
  cc: [{ email: 'cc@example.test', name: 'C, C', domain: 'example.test' }],
  replyTo: [],
  subject: 'Hello',
  headers: [['X-Campaign-Id', 'c1'], ['list-id', '<l.example.test>'], ['X-SMTPAPI', '{}'], ['content-features-x', 'y']],
  attachments: [],
  messageId: 'msg_1@mta.example.test',
  date: Date.UTC(2026, 0, 1),
};

/** The send's MIME with nodemailer's own helpers in place; the random boundary is the only part that differs. */
async function withOriginals(input: MimeInput): Promise<Buffer> {
  const proto = MimeNode.prototype as unknown as { _normalizeHeaderKey: unknown };
  const [fast, fastPlain, fastNormalize] = [mimeFuncs.hasLongerLines, mimeFuncs.isPlainText, proto._normalizeHeaderKey];
  mimeFuncs.hasLongerLines = originals.hasLongerLines;
  mimeFuncs.isPlainText = originals.isPlainText;
  proto._normalizeHeaderKey = originals.normalizeHeaderKey;
  try {
    return await composeMime(input);
  } finally {
    mimeFuncs.hasLongerLines = fast;
    mimeFuncs.isPlainText = fastPlain;
    proto._normalizeHeaderKey = fastNormalize;
  }
}

const withoutBoundaries = (raw: Buffer) => raw.toString('latin1').replace(/_NmP-[0-9a-f]+-Part_\d+/g, 'BOUNDARY');

test('a send\'s MIME is the same bytes with the replacements as with nodemailer\'s originals', async () => {
  const inputs: Array<Partial<MimeInput>> = [
    { text: TEXTS[19] },
    { text: `${line(100)}\nshort\n` },
    { text: 'Grüße aus Köln\n'.repeat(20), subject: 'Grüße' },
    { html: `<p>${line(90)}</p>\n`, text: 'plain\n' },
    { html: '<p>hi</p>', text: `${line(40)}\r\n`, attachments: [{ filename: 'a.txt', content: Buffer.from('x'), contentType: 'text/plain' }] },
    { html: '<p><img src="cid:logo"></p>', attachments: [{ filename: 'logo.png', content: Buffer.from('png'), contentId: 'logo' }] },
  ];
  for (const input of inputs) {
    const full = { ...base, ...input };
    assert.equal(withoutBoundaries(await composeMime(full)), withoutBoundaries(await withOriginals(full)));
  }
});
