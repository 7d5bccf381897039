/**
 * Outbound connections, shared by every delivery in flight. A connection is
 * keyed by (source address, MX host) and reused for up to
 * `messagesPerConnection` messages; idle ones are closed after
 * `idleConnectionMs`. Two caps bound what we open: connections to one MX host
 * (`maxConnectionsPerDomain`, so one destination never sees a flood from us)
 * and connections from one source address (`maxConnectionsPerIp`). A delivery
 * that finds both caps full waits for a connection to come free; that wait is
 * what turns a burst to one domain into a few long sessions.
 */
import type { SmtpClient, SmtpError } from './smtp-client';

export interface PoolLimits {
  maxPerHost: number;
  maxPerSource: number;
  messagesPerConnection: number;
  idleMs: number;
}

export interface PoolObserver {
  opened(): void;
  closed(): void;
}

export interface Route {
  source: string;
  host: string;
  /** connections that verified the certificate (MTA-STS enforce) are kept apart from opportunistic ones */
  verified?: boolean;
}

export type Lease = { client: SmtpClient; reused: boolean } | { error: SmtpError };

interface Entry {
  client: SmtpClient;
  route: Route;
  idleTimer?: NodeJS.Timeout;
  retired: boolean;
}

const routeKey = (r: Route): string => `${r.source} ${r.host}${r.verified ? ' verified' : ''}`;

export class SmtpPool {
  private readonly idle = new Map<string, Entry[]>();
  private readonly entries = new Map<SmtpClient, Entry>();
  // idle/entries/perHost/perSource hold open connections only (zero counts are deleted):
  // bounded by delivery.maxConnectionsPerIp × the number of source addresses.
  private readonly perHost = new Map<string, number>();
  private readonly perSource = new Map<string, number>();
  private waiters: Array<() => void> = [];
  private closing = false;

  constructor(
    private readonly limits: PoolLimits,
    private readonly observer: PoolObserver,
  ) {}

  /** An idle connection for the route, a new one from `open`, or (at the caps) the next one that comes free. */
  async acquire(route: Route, open: () => Promise<{ client: SmtpClient } | { error: SmtpError }>): Promise<Lease> {
    for (;;) {
      if (this.closing) return { error: Object.assign(new Error('delivery is stopping'), { code: 'ESTOPPING' }) };
      const entry = this.takeIdle(route);
      if (entry) return { client: entry.client, reused: true };
      const hostHasRoom = (this.perHost.get(route.host) ?? 0) < this.limits.maxPerHost;
      if (hostHasRoom && (this.sourceHasRoom(route.source) || this.evictIdleFrom(route.source))) return this.openNew(route, open);
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  /** Back to the pool after a transaction; `usable` false (or the per-connection limit) closes it. */
  release(client: SmtpClient, usable: boolean): void {
    const entry = this.entries.get(client);
    if (!entry) return;
    if (!usable || client.closed || this.closing || client.messages >= this.limits.messagesPerConnection) {
      this.retire(entry, usable && !client.closed);
      return;
    }
    const list = this.idle.get(routeKey(entry.route)) ?? [];
    list.push(entry);
    this.idle.set(routeKey(entry.route), list);
    entry.idleTimer = setTimeout(() => this.retire(entry, true), this.limits.idleMs);
    entry.idleTimer.unref();
    this.wake();
  }

  get size(): number {
    return this.entries.size;
  }

  /** Closes idle connections now and busy ones as they are released. */
  close(): void {
    this.closing = true;
    for (const list of this.idle.values()) for (const entry of [...list]) this.retire(entry, true);
    this.wake();
  }

  private takeIdle(route: Route): Entry | undefined {
    const list = this.idle.get(routeKey(route));
    while (list?.length) {
      const entry = list.pop() as Entry;
      clearTimeout(entry.idleTimer);
      if (!entry.client.closed) return entry;
      this.retire(entry, false);
    }
    return undefined;
  }

  private sourceHasRoom(source: string): boolean {
    return (this.perSource.get(source) ?? 0) < this.limits.maxPerSource;
  }

  /** At the per-source cap, an idle connection from that source to another host gives way. */
  private evictIdleFrom(source: string): boolean {
    for (const list of this.idle.values()) {
      const victim = list.find((e) => e.route.source === source);
      if (victim) {
        this.retire(victim, true);
        return true;
      }
    }
    return false;
  }

  private async openNew(route: Route, open: () => Promise<{ client: SmtpClient } | { error: SmtpError }>): Promise<Lease> {
    bump(this.perHost, route.host, 1);
    bump(this.perSource, route.source, 1);
    const result = await open();
    if ('error' in result) {
      bump(this.perHost, route.host, -1);
      bump(this.perSource, route.source, -1);
      this.wake();
      return result;
    }
    const entry: Entry = { client: result.client, route, retired: false };
    this.entries.set(result.client, entry);
    this.observer.opened();
    // A server that hangs up on an idle connection frees its slot.
    result.client.onClose(() => this.retire(entry, false));
    return { client: result.client, reused: false };
  }

  private retire(entry: Entry, polite: boolean): void {
    if (entry.retired) return;
    entry.retired = true;
    clearTimeout(entry.idleTimer);
    const list = this.idle.get(routeKey(entry.route));
    const at = list?.indexOf(entry) ?? -1;
    if (list && at >= 0) list.splice(at, 1);
    if (list && list.length === 0) this.idle.delete(routeKey(entry.route));
    this.entries.delete(entry.client);
    bump(this.perHost, entry.route.host, -1);
    bump(this.perSource, entry.route.source, -1);
    this.observer.closed();
    entry.client.close(polite);
    this.wake();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }
}

function bump(map: Map<string, number>, key: string, by: number): void {
  const next = (map.get(key) ?? 0) + by;
  if (next <= 0) map.delete(key);
  else map.set(key, next);
}
