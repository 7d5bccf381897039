// The per-address counters of the inbound listener: a limit per minute, and a map that cannot grow without bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeClock } from '../../src/clock';
import { ClientRate, MAX_TRACKED_ADDRESSES } from '../../src/smtp/client-rate';

test('a flood from 20 000 source addresses keeps the per-address map at its bound', () => {
  const rate = new ClientRate(new FakeClock(), 5);
  for (let i = 0; i < 20_000; i++) assert.equal(rate.take(`2001:db8:${i.toString(16)}::1`), true);
  assert.equal(rate.tracked, MAX_TRACKED_ADDRESSES);
});

test('an address over its limit is refused until its minute has passed, and a busy address is not evicted by newcomers', () => {
  const clock = new FakeClock();
  const rate = new ClientRate(clock, 2, 3);
  assert.deepEqual([rate.take('a'), rate.take('a'), rate.take('a')], [true, true, false]);
  assert.equal(rate.retryAfterSeconds('a'), 60);
  rate.take('b');
  rate.take('a'); // seen last, so 'b' is the least recently seen
  rate.take('c');
  rate.take('d');
  assert.equal(rate.take('a'), false, 'still counted after two newcomers');
  clock.advance(60_000);
  assert.equal(rate.take('a'), true);
});
