// Domain name normalisation: what is accepted, what it becomes, and what is refused.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isRememberedName, lookedUpNames, lookupName, normalizeDomainName } from '../../src/domains/name';

describe('domain names', () => {
  it('are trimmed, lower-cased, punycoded and lose one trailing dot', () => {
    const cases: Array<[string, string]> = [
      [' Example.COM ', 'example.com'],
      ['example.com.', 'example.com'],
      ['mail.example.co.uk', 'mail.example.co.uk'],
      ['Bücher.example', 'xn--bcher-kva.example'],
      ['xn--bcher-kva.example', 'xn--bcher-kva.example'],
      ['ｅｘａｍｐｌｅ.com', 'example.com'],
      ['a-b.c0m', 'a-b.c0m'],
      [`${'a'.repeat(63)}.com`, `${'a'.repeat(63)}.com`],
    ];
    for (const [input, expected] of cases) assert.deepEqual(normalizeDomainName(input), { ok: true, name: expected }, input);
  });

  it('refuse IP literals, numeric hosts, empty labels, bad characters and single labels', () => {
    const refused: Array<[string, RegExp]> = [
      ['', /empty/],
      ['   ', /empty/],
      ['192.0.2.1', /IP address/],
      ['192.0.2.1.', /IP address/],
      ['[2001:db8::1]', /IP address/],
      ['2001:db8::1', /IP address/],
      ['0x7f.1', /IP address/],
      ['example.com..', /empty label/],
      ['.example.com', /empty label/],
      ['example..com', /./],
      ['localhost', /two labels/],
      ['under_score.com', /invalid label|not a valid/],
      ['*.example.com', /./],
      ['-lead.com', /invalid label/],
      ['trail-.com', /invalid label/],
      [`${'a'.repeat(64)}.com`, /invalid label/],
      [`${'abcdefghi.'.repeat(25)}abcd.com`, /longer than 253/],
      ['example.123', /./],
      ['exa mple.com', /not a valid/],
      ['xn--zz.com', /not a valid/],
    ];
    for (const [input, reason] of refused) {
      const r = normalizeDomainName(input);
      assert.equal(r.ok, false, input);
      if (!r.ok) assert.match(r.reason, reason, input);
    }
  });

  it('look-ups answer as normalisation does, the same again from memory, which stays bounded', () => {
    const inputs = ['Example.COM', 'Bücher.example', 'example.com.', '192.0.2.1', 'localhost', '-lead.com'];
    const expected = inputs.map((i) => {
      const result = normalizeDomainName(i);
      return result.ok ? result.name : null;
    });
    const before = lookedUpNames();
    assert.deepEqual(inputs.map(lookupName), expected);
    assert.ok(lookedUpNames() > before, 'the answers are kept');
    for (let i = 0; i < 2_500; i++) {
      lookupName(`filler${i}.example`);
      assert.ok(lookedUpNames() <= 1_000, `${lookedUpNames()} names kept`);
    }
    assert.equal(lookedUpNames(), 1_000);
    assert.deepEqual(inputs.map(lookupName), expected);
    assert.deepEqual(inputs.map(lookupName), expected);
    // a long input (a name padded with spaces) is answered but not kept, so the cache's memory stays small
    const padded = `${' '.repeat(10_000)}Long.Example `;
    assert.equal(lookupName(padded), 'long.example');
    assert.equal(isRememberedName(padded), false);
    assert.equal(isRememberedName(' Long.Example '), false);
    assert.equal(lookupName(' Long.Example '), 'long.example');
    assert.equal(isRememberedName(' Long.Example '), true, 'a short input is kept');
  });
});
