import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import MailComposer from 'nodemailer/lib/mail-composer';
import { instrumentMessage, InstrumentOptions } from '../../src/tracking/instrument';
import { rewriteHtml } from '../../src/tracking/html';
import { signToken, verifyToken } from '../../src/tracking/tokens';
import { parseMail } from '../support/mail';

const BASE = 'https://track.example.net';
const key = crypto.randomBytes(32);
const options = (over: Partial<InstrumentOptions> = {}): InstrumentOptions => ({
  messageId: 'msg_01kabcdefghjkmnpqrstvwxyz0', accountId: 'acc_1', trackOpens: true, trackClicks: true, listUnsubscribe: false,
  recipient: 'jane@example.org', publicUrl: `${BASE}/`, key, ...over,
});

/** Every href in the HTML, in order. */
const hrefs = (html: string): string[] => [...html.matchAll(/ href="([^"]*)"/gi)].map((m) => m[1]);
const clickTarget = (href: string): string | undefined => {
  const token = href.startsWith(`${BASE}/t/c/`) ? href.slice(`${BASE}/t/c/`.length) : undefined;
  return token ? verifyToken(key, token, 'click')?.url : undefined;
};

const HTML = `<html><body><h1>Hi</h1>
<a href="https://example.com/a?x=1&amp;y=2">one</a>
<a title="a > b" href='http://example.com/b'>two</a>
<A HREF=https://example.com/c>three</A>
<a href="mailto:help@example.com">mail</a>
<a href="https://example.com/unsubscribe?u=1">unsubscribe</a>
<a data-pigeon-notrack href="https://example.com/private">private</a>
<a href="${BASE}/t/c/already">tracked</a>
<a href="#top">top</a><abbr title="x">abbr</abbr>
</body></html>`;

async function compose(mail: ConstructorParameters<typeof MailComposer>[0]): Promise<Buffer> {
  return new MailComposer({ from: 'app@sender.example', to: 'jane@example.org', subject: 'Hello', ...mail }).compile().build();
}

test('an HTML part gets one pixel and tracked http(s) links; text, attachments and embedded messages stay as they were', async () => {
  const embedded = await compose({ html: '<a href="https://inner.example/x">inner</a></body>' });
  const raw = await compose({
    text: 'Plain text with https://example.com/a',
    html: HTML,
    attachments: [
      { filename: 'page.html', content: '<a href="https://example.com/attached">x</a>', contentType: 'text/html' },
      { filename: 'fwd.eml', content: embedded, contentType: 'message/rfc822' },
    ],
  });
  const out = await instrumentMessage(raw, options());
  const mail = await parseMail(out);
  const html = mail.html as string;

  const pixels = [...html.matchAll(/<img src="([^"]+)"/g)].map((m) => m[1]);
  assert.equal(pixels.length, 1);
  assert.ok(pixels[0].startsWith(`${BASE}/t/o/`));
  assert.deepEqual(verifyToken(key, pixels[0].slice(`${BASE}/t/o/`.length), 'open'), { kind: 'open', messageId: options().messageId });
  assert.ok(html.indexOf(pixels[0]) < html.indexOf('</body>'), 'the pixel goes before </body>');

  const links = hrefs(html);
  assert.deepEqual(links.slice(0, 3).map(clickTarget), ['https://example.com/a?x=1&y=2', 'http://example.com/b', 'https://example.com/c']);
  assert.deepEqual(links.slice(3, 8), [
    'mailto:help@example.com', 'https://example.com/unsubscribe?u=1', 'https://example.com/private', `${BASE}/t/c/already`, '#top',
  ]);
  assert.match(html, /title="a > b"/, 'other attributes are kept');

  assert.ok((mail.text as string).startsWith('Plain text with https://example.com/a\n'), 'the text part is unchanged');
  const attachment = mail.attachments.find((a) => a.filename === 'page.html');
  assert.equal(attachment?.content.toString(), '<a href="https://example.com/attached">x</a>');
  // mailparser shows an attached message inline; its link must be the original.
  assert.ok(links.includes('https://inner.example/x'), 'the embedded message is not rewritten');
  assert.equal(links.filter((l) => l.startsWith(`${BASE}/t/c/`)).length, 4, 'three new tracked links plus the one already tracked');
});

test('quoted-printable Latin-1 HTML inside multipart/related keeps its charset; the inline image is copied byte for byte', async () => {
  const image = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
  const raw = Buffer.from([
    'From: app@sender.example', 'To: jane@example.org', 'Subject: Caf\u00e9', 'MIME-Version: 1.0',
    'Content-Type: multipart/related; boundary="rel"', '', '--rel',
    'Content-Type: text/html; charset=iso-8859-1', 'Content-Transfer-Encoding: quoted-printable', '',
    '<html><body><p>Caf=E9 cr=E8me</p><a href=3D"https://example.com/caf=E9?a=3D1&amp;b=3D2">go</a><img src=3D"cid:img1"></bod=',
    'y></html>', '--rel', 'Content-Type: image/png', 'Content-Transfer-Encoding: base64', 'Content-ID: <img1>', '', image, '--rel--', '',
  ].join('\r\n'), 'latin1');
  const out = await instrumentMessage(raw, options());
  assert.ok(out.includes(Buffer.from(`Content-ID: <img1>\r\n\r\n${image}\r\n--rel--`)), 'image part unchanged');
  assert.match(out.toString('latin1'), /Content-Type: text\/html; charset=iso-8859-1\r\nContent-Transfer-Encoding: quoted-printable/);
  const mail = await parseMail(out);
  const html = mail.html as string;
  assert.match(html, /<p>Café crème<\/p>/);
  assert.equal(clickTarget(hrefs(html)[0]), 'https://example.com/caf%C3%A9?a=1&b=2');
  // mailparser inlines the cid: image as a data URI; the pixel follows it, before </body>.
  assert.match(html, /<img src="data:image\/png;base64,[^"]+"><img src="https:\/\/track\.example\.net\/t\/o\/[^"]+"[^>]*><\/body>/);
});

test('a 7bit single-part HTML message is re-encoded as quoted-printable and base64 parts stay base64', async () => {
  const longLine = `<html><body>${'<a href="https://example.com/long">x</a> '.repeat(30)}</body></html>`;
  const raw = Buffer.from(['From: a@sender.example', 'To: b@example.org', 'Subject: s', 'Content-Type: text/html; charset=utf-8',
    'Content-Transfer-Encoding: 7bit', '', longLine, ''].join('\r\n'));
  const out = await instrumentMessage(raw, options({ trackOpens: false }));
  assert.match(out.toString(), /Content-Transfer-Encoding: quoted-printable/);
  assert.ok(out.toString().split('\r\n').every((l) => l.length <= 78), 'no line longer than 78 bytes');
  const html = (await parseMail(out)).html as string;
  assert.equal(hrefs(html).length, 30);
  assert.ok(hrefs(html).every((h) => clickTarget(h) === 'https://example.com/long'));
  assert.doesNotMatch(html, /\/t\/o\//, 'no pixel without trackOpens');

  const b64 = Buffer.from(['From: a@sender.example', 'To: b@example.org', 'Subject: s', 'MIME-Version: 1.0',
    'Content-Type: text/html; charset=utf-8', 'Content-Transfer-Encoding: base64', '',
    Buffer.from('<p>x</p><a href="https://example.com/z">z</a>').toString('base64'), ''].join('\r\n'));
  const outB64 = await instrumentMessage(b64, options({ trackClicks: false }));
  assert.match(outB64.toString(), /Content-Transfer-Encoding: base64/);
  const parsed = (await parseMail(outB64)).html as string;
  assert.deepEqual(hrefs(parsed), ['https://example.com/z'], 'links are left alone without trackClicks');
  assert.match(parsed, /<img src="https:\/\/track\.example\.net\/t\/o\//);
});

test('listUnsubscribe sets one-click List-Unsubscribe headers, replacing any the message had', async () => {
  const raw = await compose({ text: 'hi', headers: { 'List-Unsubscribe': '<mailto:leave@sender.example>' } });
  assert.match(raw.toString(), /List-Unsubscribe: <mailto:leave@sender.example>/);
  const out = await instrumentMessage(raw, options({ trackOpens: false, trackClicks: false, listUnsubscribe: true }));
  const text = out.toString();
  const header = /List-Unsubscribe:\s+<([^>]+)>/.exec(text);
  assert.ok(header, 'List-Unsubscribe present');
  assert.ok(header[1].startsWith(`${BASE}/u/`));
  assert.deepEqual(verifyToken(key, header[1].slice(`${BASE}/u/`.length), 'unsubscribe'), { kind: 'unsubscribe', messageId: options().messageId });
  assert.match(text, /List-Unsubscribe-Post: List-Unsubscribe=One-Click/);
  assert.doesNotMatch(text, /mailto:leave/);
  assert.equal((await parseMail(out)).text?.trim(), 'hi');
});

test('with nothing to track the message is returned as it was', async () => {
  const raw = await compose({ html: '<a href="https://example.com/">x</a>' });
  const out = await instrumentMessage(raw, options({ trackOpens: false, trackClicks: false, listUnsubscribe: false }));
  assert.equal(out, raw);
});

test('link rewriting leaves non-web links and malformed markup alone', () => {
  const rewrite = (html: string) =>
    rewriteHtml(html, { publicUrl: BASE, decode: (s) => s, trackLink: (url) => `T(${url})` });
  assert.equal(rewrite('<a href="javascript:alert(1)">x</a>'), '<a href="javascript:alert(1)">x</a>');
  assert.equal(rewrite('<a href="tel:+123">x</a><a name="n">y</a>'), '<a href="tel:+123">x</a><a name="n">y</a>');
  assert.equal(rewrite('<a href="https://exa mple.com/">x</a>'), '<a href="https://exa mple.com/">x</a>', 'unparseable URL');
  assert.equal(rewrite('<a class="b" href = "https://e.example/p" id=1>x</a>'), '<a class="b" href="T(https://e.example/p)" id=1>x</a>');
  assert.equal(rewrite('<a href="https://e.example/p"'), '<a href="https://e.example/p"', 'an unterminated tag is not touched');
  assert.equal(rewrite(`<a href="https://e.example/${'x'.repeat(2100)}">x</a>`).includes('T('), false, 'very long URLs are left alone');
  const withPixel = rewriteHtml('<p>no body tag</p>', { publicUrl: BASE, decode: (s) => s, pixelUrl: `${BASE}/t/o/p` });
  assert.match(withPixel, /^<p>no body tag<\/p><img src="https:\/\/track\.example\.net\/t\/o\/p"/);
});

test('a link whose normalised URL is too long for a token is left alone instead of becoming a dead tracking link', () => {
  const long = `https://example.net/${'\u4e2d'.repeat(660)}`; // 680 characters, ~5,960 once percent-encoded
  const short = 'https://example.net/\u4e2d';
  const html = rewriteHtml(`<a href="${long}">a</a><a href="${short}">b</a>`, {
    publicUrl: BASE,
    decode: (s) => s,
    trackLink: (url) => `${BASE}/t/c/${signToken(key, { kind: 'click', messageId: 'msg_1', linkIndex: 0, url })}`,
  });
  const [first, second] = hrefs(html);
  assert.equal(first, long, 'left as written');
  assert.ok(second.startsWith(`${BASE}/t/c/`));
  assert.ok(verifyToken(key, second.slice(`${BASE}/t/c/`.length), 'click'), 'the tracked link verifies');
});
