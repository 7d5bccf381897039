// ReadCache: the bounds and the invalidation race the key, allowlist, domain and pool caches rely on.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ReadCache } from '../../src/util/read-cache';

function counting(values: Map<string, number>) {
  const loads: string[] = [];
  const cache = new ReadCache<string, number>({ max: 3, ttlMs: 60_000, load: async (k) => (loads.push(k), values.get(k)) });
  return { cache, loads };
}

describe('ReadCache', () => {
  it('a lookup that was running when its key was invalidated cannot put the old value back', async () => {
    let release!: (v: number) => void;
    const cache = new ReadCache<string, number>({ max: 10, ttlMs: 60_000, load: () => new Promise((resolve) => (release = resolve)) });
    const racing = cache.get('key');
    cache.invalidate('key'); // the write committed while the read was in flight
    release(1);
    assert.equal(await racing, 1);
    assert.equal(cache.size, 0, 'the raced value was not stored');
  });

  it('misses are never cached: 1,000 unknown keys leave it empty and each is looked up again', async () => {
    const { cache, loads } = counting(new Map());
    for (let i = 0; i < 1_000; i++) assert.equal(await cache.get(`guess${i}`), undefined);
    assert.equal(cache.size, 0);
    await cache.get('guess0');
    assert.equal(loads.length, 1_001);
  });

  it('holds at most max entries, forgetting the least recently used', async () => {
    const { cache, loads } = counting(new Map([['a', 1], ['b', 2], ['c', 3], ['d', 4]]));
    for (const k of ['a', 'b', 'c', 'a', 'd']) await cache.get(k);
    assert.equal(cache.size, 3);
    await cache.get('a'); // kept: used after b
    await cache.get('b'); // forgotten: loaded again
    assert.deepEqual(loads, ['a', 'b', 'c', 'd', 'b']);
  });

  it('concurrent lookups of one key share one load', async () => {
    const { cache, loads } = counting(new Map([['k', 7]]));
    assert.deepEqual(await Promise.all(Array.from({ length: 20 }, () => cache.get('k'))), Array(20).fill(7));
    assert.equal(loads.length, 1);
  });

  it('an entry older than the TTL is read again', async () => {
    let n = 0;
    const cache = new ReadCache<string, number>({ max: 10, ttlMs: 30, load: async () => ++n });
    assert.equal(await cache.get('k'), 1);
    assert.equal(await cache.get('k'), 1);
    await new Promise((resolve) => setTimeout(resolve, 60));
    assert.equal(await cache.get('k'), 2);
  });
});
