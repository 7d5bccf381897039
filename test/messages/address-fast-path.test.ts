// The plain-form fast path of src/messages/addresses.ts answers exactly as nodemailer's addressparser does,
// anything it does not recognise still goes through the parser with the same errors, and the domain cache
// answers as the uncached normalisation whatever the input.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import addressparser from 'nodemailer/lib/addressparser';
import { domainCacheSize, normalizeDomain, parseAddress, splitPlain, splitWithParser } from '../../src/messages/addresses';
import { ApiError } from '../../src/http/errors';

const FAST = [
  'a@b.com', 'A.B@X.Org', 'a..b@c.d', '.a@b.c', 'a@b', 'x@-a.com', 'a@b.c.', "o'neil@x.io", 'a/b=c@d.e', '{a}@b.c',
  '#x@y.z', 'a@b.c-', 'a-@b.c', '=?x?=@b.c', 'Shop <orders@example.com>', 'Shop<a@b.c>', 'Shop Name <a@b.c>',
  'A 1 b2 <x+tag@sub.example.com>', 'Shop <a..b@c.d>', 'Shop <x@1.2.3.4>',
];
const SLOW = [
  'a@@b.c', ' a@b.c', 'a@b.c ', 'Shop  <a@b.c>', 'Sh.op <a@b.c>', '"Shop, Inc" <a@b.c>', 'Shóp <a@b.c>', 'a@bé.com',
  '=?utf-8?B?U2hvcA==?= <a@b.c>', 'a@b.c, d@e.f', 'team: a@b.c;', 'a (comment) @b.c', 'Shop <a@b.c', 'Shop <a@b.c> x',
  '<a@b.c>', 'a@b.c <d@e.f>', 'not an address', '', '@b.c', 'a@', '"a b"@c.d', 'a@[1.2.3.4]',
];

test('the fast path takes the plain forms and gives addressparser\'s address and name', () => {
  for (const input of FAST) {
    const fast = splitPlain(input);
    assert.ok(fast, `fast path for ${input}`);
    const [parsed] = addressparser(input) as addressparser.Address[];
    assert.deepEqual(fast, { address: parsed.address, name: parsed.name.trim() || null }, input);
  }
});

test('every other form goes through the parser', () => {
  for (const input of SLOW) assert.equal(splitPlain(input), undefined, input);
});

test('random inputs over the address alphabet never make the two paths disagree', () => {
  const plain = "aB9!#$%&'*+/=?^_`{|}~.-";
  const other = '@ <>"(),;:\\[]é';
  let seed = 7;
  const next = (n: number) => { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return (seed >>> 8) % n; };
  let taken = 0;
  for (let i = 0; i < 200_000; i++) {
    let s = '';
    for (let j = 0, n = 1 + next(10); j < n; j++) s += next(8) ? plain[next(plain.length)] : other[next(other.length)];
    const input = [s, `x${s}@a.b`, `Ab c <${s}@d.e>`, `${s} <a@b.c>`][next(4)];
    const fast = splitPlain(input);
    if (!fast) continue;
    taken++;
    assert.deepEqual(fast, splitWithParser(input, 'to[0]'), input);
  }
  assert.ok(taken > 10_000, `the fast path was taken ${taken} times`);
});

test('addresses either path refuses fail with the same code and parameter', () => {
  for (const input of ['a..b@c.d', '.a@b.c', 'a@b', 'x@-a.com', 'Shop <x@1.2.3.4>', 'a@@b.c', 'not an address', 'Shop <a@b.c']) {
    assert.throws(() => parseAddress(input, 'to[2]'), (e: unknown) => e instanceof ApiError && e.code === 'invalid_address' && e.param === 'to[2]', input);
  }
  assert.deepEqual(parseAddress('Shop <Orders@Example.COM>', 'from'), { email: 'Orders@example.com', name: 'Shop', domain: 'example.com' });
  assert.deepEqual(parseAddress('a@bücher.example', 'from'), { email: 'a@xn--bcher-kva.example', name: null, domain: 'xn--bcher-kva.example' });
});

test('the domain cache answers as the first answer, also for refused domains and past its bound', () => {
  const domains = ['Example.COM', 'bücher.example', '-bad.com', 'a..b', '1.2.3.4', 'ok.example'];
  const first = domains.map((d) => normalizeDomain(d));
  assert.deepEqual(first, ['example.com', 'xn--bcher-kva.example', undefined, undefined, undefined, 'ok.example']);
  for (let i = 0; i < 2_500; i++) {
    normalizeDomain(`filler${i}.example`);
    assert.ok(domainCacheSize() <= 1_000, `the cache holds ${domainCacheSize()} domains`);
  }
  assert.deepEqual(domains.map((d) => normalizeDomain(d)), first);
  assert.deepEqual(domains.map((d) => normalizeDomain(d)), first);
});
