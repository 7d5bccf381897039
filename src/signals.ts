/**
 * In-process wake-ups between stages. The database row is always the hand-off;
 * a signal only says "look now" so workers need not poll while idle. Losing a
 * signal delays work until the worker's next scheduled check, never loses it.
 *
 * Several nodes on one PostgreSQL database: every signal is emitted after the
 * commit it announces, so `emit` also hands it to the app's bus (src/db/notify.ts),
 * and the other nodes `receive` it: a send accepted on one node wakes the MTA of
 * every other, a paused destination reaches their hand-off checks.
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
  /** Set by the app's bus (a no-op on SQLite): tells the other nodes. */
  publish: (name: keyof SignalMap) => void = () => undefined;

  constructor() {
    this.emitter.setMaxListeners(50);
  }

  on<K extends keyof SignalMap>(name: K, fn: (...args: SignalMap[K]) => void): () => void {
    this.emitter.on(name, fn as (...args: unknown[]) => void);
    return () => this.emitter.off(name, fn as (...args: unknown[]) => void);
  }

  /** After a commit: wakes this app's workers and those of the other nodes. */
  emit<K extends keyof SignalMap>(name: K, ...args: SignalMap[K]): void {
    this.emitter.emit(name, ...args);
    this.publish(name);
  }

  /** Another node's signal (or a reconnect's "maybe"): wakes this app's workers only. */
  receive(name: keyof SignalMap): void {
    this.emitter.emit(name);
  }
}

const EVERY: Record<keyof SignalMap, true> = { queueChanged: true, webhooksChanged: true, domainEvents: true, destinationsChanged: true };

/** Every signal, for a reconnect after which any of them may have been missed. */
export const SIGNAL_NAMES = Object.keys(EVERY) as Array<keyof SignalMap>;

export const isSignalName = (name: string): name is keyof SignalMap => Object.hasOwn(EVERY, name);
