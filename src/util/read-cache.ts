/**
 * A read-through cache for the lookups every request makes (key, account,
 * allowlist, verified domains, pools). Bounded (LRU over `max` entries),
 * trusted for `ttlMs` of real time so a change made by another process (the
 * CLI) is seen within that bound, and invalidated at once by this process's
 * own writes. Only found values are kept: a miss (undefined) is never cached,
 * so input a caller chooses (a guessed key) cannot fill memory, and a row
 * created later is seen by the next lookup.
 *
 * Several nodes on one PostgreSQL database: each cache is named in its app's
 * CacheRegistry, so `invalidate` also tells the other nodes (src/db/notify.ts)
 * and their news is applied with `forget`, which tells no one.
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
  private shared?: { name: string; registry: CacheRegistry };

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

  /** Names this cache in the app's registry: its invalidations reach the other nodes, theirs reach it. */
  share(name: string, registry: CacheRegistry): this {
    this.shared = { name, registry };
    registry.add(name, { forget: (key) => this.forget(key as K | undefined) });
    return this;
  }

  /** After a change committed: forgets one key, or every key, here and (when shared) on the other nodes. */
  invalidate(key?: K): void {
    this.forget(key);
    this.shared?.registry.publish(this.shared.name, key === undefined ? undefined : String(key));
  }

  /** Forgets one key, or every key, here only: the next get reads the database. */
  forget(key?: K): void {
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

/** A per-app cache news from another node can clear: a ReadCache, or a cache of its own kind (pools' IpRuntime). */
export interface Forgetful {
  forget(key?: string): void;
}

/**
 * The named caches of one app (keyed by its writer handle), so invalidations can cross nodes: `publish` is
 * set by the app's bus (a no-op on SQLite), `forget` applies another node's news, `forgetAll` a reconnect's.
 */
export class CacheRegistry {
  private readonly caches = new Map<string, Forgetful[]>();
  publish: (name: string, key?: string) => void = () => undefined;

  add(name: string, cache: Forgetful): void {
    this.caches.set(name, [...(this.caches.get(name) ?? []), cache]);
  }

  /** News from another node; an unknown name is ignored (this node never built that cache, so holds nothing). */
  forget(name: string, key?: string): void {
    for (const cache of this.caches.get(name) ?? []) cache.forget(key);
  }

  forgetAll(): void {
    for (const list of this.caches.values()) for (const cache of list) cache.forget();
  }
}

const registries = new WeakMap<object, CacheRegistry>();

/** The registry of the app whose writer handle this is (created on first use). */
export function cacheRegistry(handle: object): CacheRegistry {
  let registry = registries.get(handle);
  if (!registry) registries.set(handle, (registry = new CacheRegistry()));
  return registry;
}

/** A cache per app, and how to invalidate it after a committed change. */
export interface PerAppCache<H, V> {
  (handle: H): ReadCache<string, V> | undefined;
  /**
   * This app's entry and the other nodes'. Given a handle without a cache (a transaction: nothing to do;
   * a CLI handle on PostgreSQL, whose registry publishes: the nodes' only).
   */
  invalidate(handle: H, key?: string): void;
}

/**
 * One cache per app: keyed by the app's writer handle (see db/reader.ts), created on first use and named
 * `name` in the app's registry. Given a transaction or a CLI handle it returns undefined and the caller
 * reads directly.
 */
export function cachePerApp<H extends object, V>(
  name: string,
  hasCache: (handle: H) => boolean,
  create: (handle: H) => ReadCache<string, V>,
): PerAppCache<H, V> {
  const caches = new WeakMap<H, ReadCache<string, V>>();
  const cacheOf = (handle: H): ReadCache<string, V> | undefined => {
    if (!hasCache(handle)) return undefined;
    let cache = caches.get(handle);
    if (!cache) caches.set(handle, (cache = create(handle).share(name, cacheRegistry(handle))));
    return cache;
  };
  return Object.assign(cacheOf, {
    invalidate(handle: H, key?: string): void {
      const cache = cacheOf(handle);
      if (cache) cache.invalidate(key);
      else registries.get(handle)?.publish(name, key);
    },
  });
}
