/**
 * A least-recently-used map bounded by entry count and by a caller-given
 * weight (e.g. template source length), for the compiled-template caches.
 */
export class BoundedCache<V> {
  private readonly entries = new Map<string, { value: V; weight: number }>();
  private weight = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxWeight: number,
  ) {}

  get(key: string): V | undefined {
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    this.entries.delete(key); // re-insert: most recently used last
    this.entries.set(key, hit);
    return hit.value;
  }

  set(key: string, value: V, weight: number): void {
    if (weight > this.maxWeight / 8) return; // one huge entry would evict everything else
    this.delete(key);
    this.entries.set(key, { value, weight });
    this.weight += weight;
    while (this.entries.size > this.maxEntries || this.weight > this.maxWeight) {
      this.delete(this.entries.keys().next().value as string);
    }
  }

  delete(key: string): void {
    const old = this.entries.get(key);
    if (!old) return;
    this.entries.delete(key);
    this.weight -= old.weight;
  }
}
