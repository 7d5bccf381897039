/**
 * The request limits where requests are made (send-thread.ts): at most
 * `perLane` at once to one webhook and `total` in all. The dispatcher hands
 * the thread a round of requests more than those limits let run (see its
 * Slots), so a finished request's successor starts at once, without a trip
 * through the main thread's event loop; they wait here, first come first
 * served, skipping lanes at their limit. A waiting request that is aborted
 * leaves without running.
 */
export class LaneGate {
  private readonly running = new Map<string, number>();
  private runningTotal = 0;
  private waiting: Array<{ lane: string; start(): void }> = [];
  private idleWaiters: Array<() => void> = [];

  constructor(private readonly perLane: number, private readonly total: number) {}

  /**
   * Runs `fn` once the limits allow, telling it whether it had to wait; `aborted` answers instead when `signal`
   * fires before it started.
   */
  run<T>(lane: string, fn: (waited: boolean) => Promise<T>, aborted: () => T, signal?: AbortSignal): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let waited = false;
      const start = () => {
        signal?.removeEventListener('abort', leave);
        this.enter(lane);
        fn(waited).then(resolve, reject).finally(() => this.exit(lane));
      };
      const entry = { lane, start };
      const leave = () => {
        this.waiting = this.waiting.filter((w) => w !== entry);
        resolve(aborted());
      };
      if (signal?.aborted) return resolve(aborted());
      if (this.fits(lane)) return start();
      signal?.addEventListener('abort', leave, { once: true });
      waited = true;
      this.waiting.push(entry);
    });
  }

  /** Nothing runs or waits (a thread's stand-in is done: send-thread.ts). */
  get idle(): boolean {
    return this.runningTotal === 0 && this.waiting.length === 0;
  }

  /** Calls `fn` once idle (at once when idle now). */
  whenIdle(fn: () => void): void {
    if (this.idle) fn();
    else this.idleWaiters.push(fn);
  }

  private fits(lane: string): boolean {
    return this.runningTotal < this.total && (this.running.get(lane) ?? 0) < this.perLane;
  }

  private enter(lane: string): void {
    this.running.set(lane, (this.running.get(lane) ?? 0) + 1);
    this.runningTotal++;
  }

  private exit(lane: string): void {
    const left = (this.running.get(lane) ?? 0) - 1;
    if (left > 0) this.running.set(lane, left);
    else this.running.delete(lane);
    this.runningTotal--;
    const next = this.waiting.findIndex((w) => this.fits(w.lane));
    if (next >= 0) this.waiting.splice(next, 1)[0].start();
    if (this.idle) for (const fn of this.idleWaiters.splice(0)) fn();
  }
}
