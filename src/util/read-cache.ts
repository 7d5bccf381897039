/**
 * A read-through cache for the lookups every request makes (key, account,
 * allowlist, verified domains, pools). Bounded (LRU over `max` entries),
 * trusted for `ttlMs` of real time so a change made by another process (the
 * CLI) is seen within that bound, and invalidated at once by this process's
 * own writes. Only found values are kept: a miss (undefined) is never cached,
 * so input a caller chooses (a guessed key) cannot fill memory, and a row
 * created later is seen by the next lookup.
 *
 * Concurrent lookups of one key share one load. A load that was running when
 * its entry was invalidated is not stored (the epoch check), so a read that
 * raced a write cannot put the old state back for a whole TTL.
 */
import { LruMap } from './lru';

export interface ReadCacheOptions<K, V> {
  /** Entries kept; beyond it the least recently used is forgotten. */
  max: number;
  /** Real time an entry is trusted (a fake app clock must not freeze the cache). */
  ttlMs: number;
  load(key: K): Promise<V | undefined>;
}

export class ReadCache<K, V> {
  private readonly entries: LruMap<K, { value: V; at: number }>;
  private readonly loading = new Map<K, Promise<V | undefined>>();
  private epoch = 0;

  constructor(private readonly options: ReadCacheOptions<K, V>) {
    this.entries = new LruMap(options.max);
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: K): Promise<V | undefined> {
    const hit = this.entries.get(key);
    if (hit && performance.now() - hit.at < this.options.ttlMs) return Promise.resolve(hit.value);
    return this.loading.get(key) ?? this.load(key);
  }

  /** Forgets one key, or every key: the next get reads the database. */
  invalidate(key?: K): void {
    this.epoch++;
    if (key === undefined) {
      for (const k of [...this.entries.keys()]) this.entries.delete(k);
      this.loading.clear();
    } else {
      this.entries.delete(key);
      this.loading.delete(key);
    }
  }

  private load(key: K): Promise<V | undefined> {
    const epoch = this.epoch;
    const at = performance.now();
    const pending = this.options.load(key).then((value) => {
      if (value !== undefined && epoch === this.epoch) this.entries.set(key, { value, at });
      return value;
    });
    this.loading.set(key, pending);
    const done = () => {
      if (this.loading.get(key) === pending) this.loading.delete(key);
    };
    pending.then(done, done);
    return pending;
  }
}

/**
 * One cache per app: keyed by the app's writer handle (see db/reader.ts), created on first use. Given
 * a transaction or a CLI handle it returns undefined and the caller reads directly.
 */
export function cachePerApp<H extends object, C>(hasCache: (handle: H) => boolean, create: (handle: H) => C): (handle: H) => C | undefined {
  const caches = new WeakMap<H, C>();
  return (handle) => {
    if (!hasCache(handle)) return undefined;
    let cache = caches.get(handle);
    if (!cache) caches.set(handle, (cache = create(handle)));
    return cache;
  };
}
