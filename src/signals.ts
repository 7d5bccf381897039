/**
 * In-process wake-ups between stages. The database row is always the hand-off;
 * a signal only says "look now" so workers need not poll while idle. Losing a
 * signal delays work until the worker's next scheduled check, never loses it.
 */
import { EventEmitter } from 'node:events';

export interface SignalMap {
  /** New or re-queued messages may be due. */
  queueChanged: [];
  /** New webhook deliveries may be due. */
  webhooksChanged: [];
  /** A sending domain changed state (rows in domain_events). */
  domainEvents: [];
  /** An operator paused or resumed a destination (paused_destinations). */
  destinationsChanged: [];
}

export class Signals {
  private readonly emitter = new EventEmitter();

  constructor() {
    this.emitter.setMaxListeners(50);
  }

  on<K extends keyof SignalMap>(name: K, fn: (...args: SignalMap[K]) => void): () => void {
    this.emitter.on(name, fn as (...args: unknown[]) => void);
    return () => this.emitter.off(name, fn as (...args: unknown[]) => void);
  }

  emit<K extends keyof SignalMap>(name: K, ...args: SignalMap[K]): void {
    this.emitter.emit(name, ...args);
  }
}
