// The body hash takes a shortcut for bodies already in relaxed form; it must always equal the hash of the rules applied as written.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { bodyHash, relaxedBody, splitMessage } from '../../src/delivery/dkim-canon';

const byRules = (body: Buffer) => crypto.createHash('sha256').update(relaxedBody(body.toString('latin1')), 'latin1').digest('base64');

/** A small deterministic generator (mulberry32), so a failure names a body that can be rebuilt. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('DKIM body hash', () => {
  it('equals the rules as written for bodies of every kind of whitespace and line end', () => {
    const pieces = ['a', 'b', '=', '.', ' ', '  ', '\t', '\r\n', '\r\n', '\n', '\r', ' \r\n', '\xe9'];
    const next = random(20261123);
    let shortcut = 0;
    for (let i = 0; i < 3000; i++) {
      const n = Math.floor(next() * 40);
      const body = Buffer.from(Array.from({ length: n }, () => pieces[Math.floor(next() * pieces.length)]).join(''), 'latin1');
      assert.equal(bodyHash(body), byRules(body), JSON.stringify(body.toString('latin1')));
      if (!/[\t]| {2}| \r?\n| $|(^|[^\r])\n/.test(body.toString('latin1'))) shortcut++;
    }
    assert.ok(shortcut > 100, `only ${shortcut} bodies took the shortcut`);
  });

  it('hashes a clean body with any number of final line ends as one CRLF, and an empty one as empty', () => {
    for (const text of ['line one\r\nline two', 'line one\r\nline two\r\n', 'line one\r\nline two\r\n\r\n\r\n', '', '\r\n', '\r\n\r\n', 'x\r\r\n']) {
      assert.equal(bodyHash(Buffer.from(text, 'latin1')), byRules(Buffer.from(text, 'latin1')), JSON.stringify(text));
    }
    assert.equal(bodyHash(Buffer.alloc(0)), crypto.createHash('sha256').digest('base64'));
  });

  it('splits at the first blank line, CRLF or bare LF, and leaves the body as bytes', () => {
    const cases: Array<[string, string[], string]> = [
      ['A: 1\r\nB: 2\r\n\r\nbody\r\n', ['A', 'B'], 'body\r\n'],
      ['A: 1\nB: 2\n\nbody\n', ['A', 'B'], 'body\n'],
      ['A: 1\r\n\nbody', ['A'], 'body'],
      ['A: 1\n\r\nbody', ['A'], 'body'],
      ['\r\nbody', [], 'body'],
      ['\nbody', [], 'body'],
      ['A: 1\r\n b', ['A'], ''],
      ['A: 1', ['A'], ''],
    ];
    for (const [text, names, body] of cases) {
      const split = splitMessage(Buffer.from(text, 'latin1'));
      assert.deepEqual(split.headers.map((h) => h.name), names, JSON.stringify(text));
      assert.equal(split.body.toString('latin1'), body, JSON.stringify(text));
    }
  });
});
