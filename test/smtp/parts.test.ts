// The pure pieces of the SMTP module, on the inputs that are hard to provoke over the wire.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LineChecker } from '../../src/smtp/data-reader';
import { decodeEncodedWords, splitMessage } from '../../src/smtp/headers';
import { parseContentType } from '../../src/smtp/mime-tree';
import { queuedReply } from '../../src/smtp/replies';
import { PARSE_PREFIX_BYTES, parseReport } from '../../src/smtp/reports';
import { classifyDsn } from '../../src/smtp/report-handler';
import { createClassifier } from '../../src/delivery/classify';

const check = (...chunks: string[]) => {
  const c = new LineChecker();
  for (const chunk of chunks) c.push(Buffer.from(chunk, 'latin1'));
  return c.end();
};

test('line checks hold across chunk boundaries', () => {
  assert.equal(check('a\r', '\nb\r\n'), null);
  assert.equal(check('a\r', 'b\r\n'), 'bare_cr');
  assert.equal(check('a\r\n', '\n'), 'bare_lf');
  assert.equal(check('a\r'), 'bare_cr');
  assert.equal(check('x'.repeat(500), 'x'.repeat(498), '\r\n'), null);
  assert.equal(check('x'.repeat(500), 'x'.repeat(499), '\r\n'), 'line_too_long');
});

/** The rules byte by byte, as RFC 5322 states them: the reference the checker's faster scan must agree with. */
function referenceFault(text: string): string | null {
  let lineLength = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '\r') {
      if (text[i + 1] !== '\n') return 'bare_cr';
      i++;
      lineLength = 0;
    } else if (text[i] === '\n') {
      return 'bare_lf';
    } else if (++lineLength > 998) {
      return 'line_too_long';
    }
  }
  return null;
}

test('line checks agree with the byte-by-byte rules on random input cut into random chunks', () => {
  let seed = 7;
  const random = (n: number) => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0), (seed >>> 8) % n); // a fixed sequence: failures reproduce
  const pieces = ['a', 'xyz', '\r\n', '\r\n', '\r', '\n', 'x'.repeat(400), '.\r\n'];
  const verdicts = new Set<string | null>();
  for (let round = 0; round < 2000; round++) {
    const text = Array.from({ length: 1 + random(12) }, () => pieces[random(pieces.length)]).join('');
    const chunks: string[] = [];
    for (let at = 0; at < text.length;) {
      const size = 1 + random(text.length);
      chunks.push(text.slice(at, at + size));
      at += size;
    }
    const expected = referenceFault(text);
    verdicts.add(expected);
    assert.equal(check(...chunks), expected, JSON.stringify(chunks));
  }
  assert.deepEqual([...verdicts].sort(), ['bare_cr', 'bare_lf', 'line_too_long', null].sort(), 'every verdict was exercised');
});

test('RFC 2047 encoded words in header values are decoded', () => {
  assert.equal(decodeEncodedWords('=?UTF-8?Q?=7B=22order=22=3A=227=22=7D?='), '{"order":"7"}');
  assert.equal(decodeEncodedWords('=?utf-8?B?w7xiZXI=?= =?UTF-8?Q?_alles?='), 'über alles');
  assert.equal(decodeEncodedWords('=?iso-8859-1?Q?caf=E9?= plain'), 'café plain');
  assert.equal(decodeEncodedWords('=?x-unknown?Q?a?='), '=?x-unknown?Q?a?=');
  assert.equal(decodeEncodedWords('no words here'), 'no words here');
});

test('header blocks: folding kept, malformed lines noticed, a message without body is all header', () => {
  const { fields, body, malformed } = splitMessage(Buffer.from('Subject: a\r\n b\r\nFrom: x@y.z\r\n\r\nbody\r\n'));
  assert.deepEqual(fields.map((f) => f.text), ['Subject: a\r\n b', 'From: x@y.z']);
  assert.equal(body.toString(), 'body\r\n');
  assert.equal(malformed, false);
  assert.equal(splitMessage(Buffer.from('Subject: a\r\nnot a header\r\n\r\n')).malformed, true);
  assert.equal(splitMessage(Buffer.from('Subject: only\r\n')).fields.length, 1);
});

test('the queued reply stays under the 512-octet reply limit and names the batch when ids are left out', () => {
  const ids = Array.from({ length: 50 }, (_, i) => `msg_${String(i).padStart(26, '0')}`);
  const reply = queuedReply(ids, 'bat_01m7zxg17y3wne6y6ed127agyb');
  assert.ok(`250 ${reply}\r\n`.length <= 512, `${reply.length}`);
  assert.match(reply, /^2\.0\.0 Ok: queued as (msg_\d{26} )+and \d+ more \(batch bat_01m7zxg17y3wne6y6ed127agyb\)$/);
  const listed = reply.match(/msg_\d{26}/g)!.length;
  assert.equal(Number(/and (\d+) more/.exec(reply)![1]) + listed, 50);
  assert.equal(queuedReply(ids.slice(0, 2), 'bat_x'), `2.0.0 Ok: queued as ${ids[0]} ${ids[1]}`);
});

test('content types with quoted, folded and odd parameters', () => {
  assert.deepEqual(parseContentType('Multipart/Report; report-type="delivery-status";\tboundary="a;b \\"c\\""'), {
    type: 'multipart/report', params: { 'report-type': 'delivery-status', boundary: 'a;b "c"' },
  });
  assert.deepEqual(parseContentType(undefined), { type: 'text/plain', params: {} });
});

test('a quoted-printable delivery status with LF line ends still parses', () => {
  const raw = [
    'Content-Type: multipart/report; report-type=delivery-status; boundary=zz', '', '--zz', 'Content-Type: text/plain', '', 'sorry', '--zz',
    'Content-Type: message/delivery-status', 'Content-Transfer-Encoding: quoted-printable', '',
    'Reporting-MTA: dns; mx.example', '', 'Final-Recipient: rfc822; Ann@Example.org', 'Action: failed', 'Status: 5.2.2',
    'Diagnostic-Code: smtp; 552 5.2.2 Mailbox full =3D over quota', '--zz--', '',
  ].join('\n');
  const report = parseReport(Buffer.from(raw));
  assert.equal(report.kind, 'dsn');
  if (report.kind !== 'dsn') return;
  assert.deepEqual(report.recipients[0], {
    addresses: ['ann@example.org'], action: 'failed', status: '5.2.2', diagnostic: '552 5.2.2 Mailbox full = over quota', remoteMta: null,
  });
  const outcome = classifyDsn(createClassifier(''), report.recipients[0]);
  assert.equal(outcome?.kind, 'bounce');
  if (outcome?.kind !== 'bounce') return;
  assert.deepEqual([outcome.bounce.type, outcome.bounce.category, outcome.bounce.suppress], ['soft', 'mailbox_full', false], 'the MTA\'s bounce rules apply');
});

test('a 1 MiB report of 30 000 crafted DSN recipient blocks is read only as far as its first 128 KiB', () => {
  const blocks = Array.from({ length: 30_000 }, (_, i) => `Final-Recipient: rfc822; r${i}@example.org\r\nAction: failed\r\n`).join('\r\n');
  const raw = Buffer.from(`Content-Type: multipart/report; report-type=delivery-status; boundary=zz\r\n\r\n--zz\r\nContent-Type: message/delivery-status\r\n\r\n\r\n${blocks}--zz--\r\n`);
  assert.ok(raw.length > 1024 * 1024);
  const report = parseReport(raw);
  assert.equal(report.kind, 'dsn');
  if (report.kind !== 'dsn') return;
  assert.ok(report.recipients.length < PARSE_PREFIX_BYTES / 40, `${report.recipients.length} blocks read`);
  assert.deepEqual(report.recipients[0].addresses, ['r1@example.org'], 'the first group is the per-message one');
});
