// Ids drawn from the pooled randomness stay unique, well-formed and in creation order across pool refills.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { identifierBytes, isId, newId } from '../../src/ids';

test('ids across many pool refills are unique, well-formed and sorted by creation', () => {
  const ids = Array.from({ length: 5000 }, () => newId('msg')); // 16 bytes each: about 20 refills of the pool
  assert.equal(new Set(ids).size, ids.length);
  for (const id of ids) assert.ok(isId('msg', id), id);
  assert.deepEqual([...ids].sort(), ids);
});

test('ids stay unique and ordered within a millisecond, across milliseconds and when the clock steps back', (t) => {
  const times = [1000, 1000, 1000, 1001, 999, 998, 1001, 1002, 1002, 500, 1003, 1003];
  let i = 0;
  t.mock.method(Date, 'now', () => 1_900_000_000_000 + times[Math.min(i++, times.length - 1)]);
  const ids = times.map(() => newId('evt'));
  assert.equal(new Set(ids).size, ids.length);
  assert.deepEqual([...ids].sort(), ids);
  // The time part follows the clock forward and holds still while it steps back.
  const timeParts = ids.map((id) => id.slice(4, 14));
  assert.equal(new Set(timeParts).size, 4, timeParts.join(' '));
});

test('identifier bytes do not repeat from one call to the next, nor when a call spans a refill', () => {
  const seen = new Set<string>();
  for (let i = 0; i < 2000; i++) seen.add(identifierBytes(9).toString('hex'));
  seen.add(identifierBytes(5000).subarray(0, 16).toString('hex')); // larger than the pool
  assert.equal(seen.size, 2001);
  assert.equal(identifierBytes(12).length, 12);
});
