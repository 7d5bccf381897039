// The key per-client limits count by: an IPv6 client holds a /64, so rotating within it must not reset its counts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rateLimitKey } from '../../src/net/client-key';
import { ClientRate } from '../../src/smtp/client-rate';
import { ClientConnections } from '../../src/smtp/client-limit';
import { FakeClock } from '../../src/clock';

test('addresses of one IPv6 /64 share one rate-limit key; IPv4 and IPv4-mapped IPv6 are the IPv4 address', () => {
  assert.equal(rateLimitKey('2001:db8:1:2::1'), '2001:db8:1:2::/64');
  assert.equal(rateLimitKey('2001:db8:1:2:ffff:ffff:ffff:ffff'), '2001:db8:1:2::/64');
  assert.equal(rateLimitKey('2001:0db8:0001:0002:0:0:0:7'), '2001:db8:1:2::/64', 'spelled out, the same key');
  assert.equal(rateLimitKey('[2001:db8:1:2::3]'), '2001:db8:1:2::/64');
  assert.notEqual(rateLimitKey('2001:db8:1:3::1'), rateLimitKey('2001:db8:1:2::1'));
  assert.equal(rateLimitKey('::1'), '::/64');
  assert.equal(rateLimitKey('203.0.113.9'), '203.0.113.9');
  assert.equal(rateLimitKey('::ffff:203.0.113.9'), '203.0.113.9');
  assert.equal(rateLimitKey('::ffff:cb00:7109'), '203.0.113.9');
  assert.equal(rateLimitKey('not an address'), 'not an address');
});

test('an inbound sender rotating source addresses within its /64 hits the per-minute limit as one client', () => {
  const rate = new ClientRate(new FakeClock(), 3);
  const taken = [1, 2, 3, 4].map((i) => rate.take(`2001:db8:5:6::${i}`));
  assert.deepEqual(taken, [true, true, true, false]);
  assert.equal(rate.take('2001:db8:5:7::1'), true, 'another /64 counts apart');
  assert.equal(rate.tracked, 2);
});

test('a client opening connections from many addresses of its /64 meets one concurrent cap', () => {
  const open = new ClientConnections(2);
  assert.deepEqual([open.admit('s1', '2001:db8::a'), open.admit('s2', '2001:db8::b'), open.admit('s3', '2001:db8::c')], [true, true, false]);
  open.release('s1');
  assert.equal(open.admit('s4', '2001:db8::d'), true);
  assert.equal(open.admit('s5', '::ffff:192.0.2.1'), true);
  assert.equal(open.admit('s6', '192.0.2.1'), true);
  assert.equal(open.admit('s7', '192.0.2.1'), false, 'the mapped form is the same IPv4 client');
});
