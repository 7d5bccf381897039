/**
 * A Map that forgets its least recently used entry beyond `max` entries: for
 * caches keyed by anything a caller can choose, so memory stays bounded
 * whatever the input. A Map keeps insertion order, so re-inserting on use
 * makes the first key the least recently used.
 */
export class LruMap<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly max: number) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: K): V | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }

  /** Reads without counting as a use. */
  peek(key: K): V | undefined {
    return this.entries.get(key);
  }

  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    while (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value as K);
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  /** Oldest first. */
  keys(): IterableIterator<K> {
    return this.entries.keys();
  }
}
