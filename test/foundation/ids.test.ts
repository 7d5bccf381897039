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

test('identifier bytes do not repeat from one call to the next, nor when a call spans a refill', () => {
  const seen = new Set<string>();
  for (let i = 0; i < 2000; i++) seen.add(identifierBytes(9).toString('hex'));
  seen.add(identifierBytes(5000).subarray(0, 16).toString('hex')); // larger than the pool
  assert.equal(seen.size, 2001);
  assert.equal(identifierBytes(12).length, 12);
});
