// The MIME a send stores is written in one synchronous pass over the composer's tree (src/messages/mime-serialize.ts),
// not through MimeNode#build's streams. For every shape of message a send can make, the bytes must be build()'s
// own: each input below is composed twice with the same boundary, once each way.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import MimeNode from 'nodemailer/lib/mime-node';
import { composeMime, mimeTree, ONE_PASS_MAX_BYTES, partBytes, type Attachment, type MimeInput } from '../../src/messages/mime';
import { serializeMime } from '../../src/messages/mime-serialize';
import { mimeInput } from './mime-input';

const BOUNDARY = '0123456789abcdef';

function built(input: MimeInput): Promise<Buffer> {
  return mimeTree(input, BOUNDARY).build();
}

function serialized(input: MimeInput): Buffer {
  const bytes = serializeMime(mimeTree(input, BOUNDARY));
  assert.ok(bytes, 'a tree of in-memory parts is serialized');
  return bytes;
}

const address = (email: string, name: string | null = null) => ({ email, name, domain: email.split('@')[1] });
const line = (n: number, c = 'a') => c.repeat(n);
/** Bytes from a fixed seed, so a failure names the same input every run. */
const bytes = (n: number, seed: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 131 + seed * 17 + ((i * i) >> 3)) & 0xff));
const attachment = (size: number, seed: number, extra: Partial<Attachment> = {}): Attachment => ({ filename: `file${seed}.bin`, content: bytes(size, seed), ...extra });

const TEXTS = [
  undefined, '', 'short', 'ends without a line break', 'one\n', 'lf\nonly\nlines\n', 'crlf\r\nlines\r\n', 'cr\ronly\r',
  `${line(76)}\n${line(77)}\n`, `${line(300)}`, `${'Your order has shipped and will arrive within two working days. Thank you!\n'.repeat(70)}`,
  'Grüße aus Köln\n'.repeat(30), `${line(80, 'é')}\n`, '日本語のテキスト\n'.repeat(40), 'emoji 🎉 and a lone \ud800 surrogate\n',
  'control \x01 char\n', 'tab\tand =equals= and trailing space \n', '.\n..\n.leading dots\n', `${line(75)}=\n${line(76)} \n`,
];
const HTMLS = [undefined, '<p>hi</p>', `<p>${line(200)}</p>\n`, '<p>Grüße, <b>München</b> — “quoted”</p>\n'.repeat(20), '<img src="cid:logo">'];
const SUBJECTS = ['Hello', '', 'Grüße aus Köln', `${'A long subject that goes on '.repeat(6)}end`, '日本語の件名', 'quotes " and =? and ?= and \\'];
const FROMS = [address('app@example.test'), address('app@example.test', 'Shop'), address('app@example.test', 'Shop, Inc. "Best"'), address('app@example.test', 'Björk Guðmundsdóttir')];

function corpus(): MimeInput[] {
  const inputs: MimeInput[] = [];
  let n = 0;
  for (const text of TEXTS) {
    for (const html of HTMLS) {
      n++;
      if (text === undefined && html === undefined) continue;
      inputs.push({
        ...mimeInput, text, html,
        subject: SUBJECTS[n % SUBJECTS.length],
        from: FROMS[n % FROMS.length],
        to: n % 3 ? [address('user@example.test')] : [address('user@example.test', 'User Name'), address('b@xn--jgeva-dua.ee', 'Bö')],
        cc: n % 4 === 0 ? [address('cc@example.test', 'C, C')] : [],
        replyTo: n % 5 === 0 ? [address('reply@example.test')] : [],
        headers: n % 2 ? [['X-Campaign-Id', `c${n}`], ['List-Unsubscribe', '<https://example.test/u/abc>'], ['X-Note', 'Grüße']] : [],
      });
    }
  }
  return inputs;
}

describe('MIME written in one pass', () => {
  it('is build()\'s bytes for every text, html, subject, address and header shape', async () => {
    const inputs = corpus();
    assert.ok(inputs.length > 80);
    for (const [i, input] of inputs.entries()) {
      assert.deepEqual(serialized(input).toString('latin1'), (await built(input)).toString('latin1'), `input ${i}: ${JSON.stringify(input).slice(0, 200)}`);
    }
  });

  it('is build()\'s bytes with attachments of every size around base64\'s 3-byte groups and 76-letter lines', async () => {
    const sizes = [0, 1, 2, 3, 4, 5, 56, 57, 58, 59, 60, 114, 1000, 65_536, 200_001];
    for (const [i, size] of sizes.entries()) {
      for (const body of [{ text: 'see attached\n' }, { html: '<p>see attached</p>', text: 'see attached\n' }, {}]) {
        const input: MimeInput = { ...mimeInput, ...body, attachments: [attachment(size, i)] };
        assert.deepEqual(serialized(input), await built(input), `attachment of ${size} bytes, ${Object.keys(body).join('+') || 'no body'}`);
      }
    }
  });

  it('is build()\'s bytes for inline parts, several attachments and text attachments', async () => {
    const inputs: MimeInput[] = [
      { ...mimeInput, html: '<p><img src="cid:logo"></p>', attachments: [attachment(700, 1, { filename: 'logo.png', contentId: 'logo' })] },
      { ...mimeInput, html: '<p><img src="cid:logo"></p>', text: 'plain\n', attachments: [attachment(700, 2, { filename: 'logo.png', contentId: 'logo' }), attachment(90, 3)] },
      { ...mimeInput, text: 'two\n', attachments: [attachment(10, 4), attachment(11, 5, { filename: 'Grüße.txt', contentType: 'text/plain' })] },
      { ...mimeInput, text: 'csv\n', attachments: [{ filename: 'data.csv', content: Buffer.from('a,b\r\n1,2\r\n'), contentType: 'text/csv' }] },
      { ...mimeInput, attachments: [attachment(3000, 6, { filename: 'only.pdf', contentType: 'application/pdf' })] },
    ];
    for (const [i, input] of inputs.entries()) assert.deepEqual(serialized(input), await built(input), `input ${i}`);
  });

  it('takes attachment bytes as the MIME threads get them, plain Uint8Arrays at an offset', async () => {
    const backing = bytes(5000, 9);
    const view = new Uint8Array(backing.buffer, backing.byteOffset + 7, 4000);
    const input: MimeInput = { ...mimeInput, text: 'x\n', attachments: [{ filename: 'v.bin', content: view as Buffer }] };
    const expected: MimeInput = { ...input, attachments: [{ filename: 'v.bin', content: Buffer.from(backing.subarray(7, 4007)) }] };
    assert.deepEqual(serialized(input), await built(expected));
  });

  it('is build()\'s bytes for a large quoted-printable text, pass-through parts and a multipart part with content', async () => {
    const big = `${'Grüße, a line long enough to be wrapped by quoted-printable soft breaks: '.repeat(3)}=\n`.repeat(1000);
    const inputs: MimeInput[] = [
      { ...mimeInput, text: big },
      { ...mimeInput, attachments: [{ filename: 'm.eml', content: Buffer.from('Subject: x\r\n\r\nends with a bare CR\r'), contentType: 'message/rfc822' }] },
      { ...mimeInput, attachments: [{ filename: 'm.eml', content: Buffer.from('Subject: x\r\n\r\nno final line break'), contentType: 'message/rfc822' }] },
      { ...mimeInput, text: 'x\n', attachments: [{ filename: 'p.bin', content: Buffer.from('--b\r\n\r\nx\r\n--b--'), contentType: 'multipart/mixed' }] },
    ];
    for (const [i, input] of inputs.entries()) assert.deepEqual(serialized(input), await built(input), `input ${i}`);
  });

  it('leaves a tree with a raw node to build()', () => {
    const tree = mimeTree({ ...mimeInput, text: 'x\n' }, BOUNDARY);
    tree.setRaw('Subject: raw\r\n\r\nraw\r\n');
    assert.equal(serializeMime(tree), undefined);
  });

  it('composeMime writes a message up to the size in one pass, and a larger one through build(), alike', async () => {
    const proto = MimeNode.prototype as unknown as { build: (...args: unknown[]) => unknown };
    const build = proto.build;
    let builds = 0;
    proto.build = function (this: MimeNode, ...args: unknown[]) {
      builds++;
      return build.apply(this, args);
    };
    try {
      const sized = (n: number): MimeInput => ({ ...mimeInput, subject: 's', text: undefined, attachments: [attachment(n - 1, 7)] });
      const under = sized(ONE_PASS_MAX_BYTES);
      const over = sized(ONE_PASS_MAX_BYTES + 1);
      assert.deepEqual([partBytes(under), partBytes(over)], [ONE_PASS_MAX_BYTES, ONE_PASS_MAX_BYTES + 1]);
      const withoutBoundaries = (raw: Buffer) => raw.toString('latin1').replace(/_NmP-[0-9a-f]+-Part_\d+/g, 'BOUNDARY');
      const underRaw = await composeMime(under);
      assert.equal(builds, 0, 'a message up to the size does not go through build()');
      assert.equal(withoutBoundaries(underRaw), withoutBoundaries(await mimeTree(under).build()));
      builds = 0;
      const overRaw = await composeMime(over);
      assert.equal(builds, 1, 'a larger one does');
      assert.equal(withoutBoundaries(overRaw), withoutBoundaries(serialized(over)));
    } finally {
      proto.build = build;
    }
  });

  it('leaves a tree with a streamed part to build()', async () => {
    const tree = mimeTree({ ...mimeInput, text: 'x\n' }, BOUNDARY);
    const streamed = new PassThrough();
    tree.childNodes.length ? tree.childNodes[0].setContent(streamed) : tree.setContent(streamed);
    assert.equal(serializeMime(tree), undefined);
    streamed.end('streamed\n');
    assert.match((await tree.build()).toString(), /streamed/);
  });

  it('is what a send stores', async () => {
    const input: MimeInput = { ...mimeInput, text: 'Hello\n', html: '<p>Hello</p>' };
    const raw = (await composeMime(input)).toString();
    assert.match(raw, /^Content-Type: multipart\/alternative;\r\n boundary="--_NmP-[0-9a-f]{16}-Part_1"\r\n/m);
    assert.ok(raw.endsWith('--\r\n'));
  });
});
