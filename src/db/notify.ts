/**
 * Wake-ups and cache invalidation across nodes sharing one PostgreSQL
 * database (LISTEN/NOTIFY). Two kinds of news travel, both "look again", never
 * the change itself (the database row stays the hand-off):
 *
 * - a signal (src/signals.ts: queueChanged, webhooksChanged,
 *   destinationsChanged, domainEvents): the other nodes emit it locally, so
 *   their MTA claims at once a message accepted elsewhere;
 * - a cache invalidation (src/util/read-cache.ts registry): the other nodes
 *   forget that entry, so a key revoked on one node is refused on all.
 *
 * Publishing happens after the commit that made the change (the callers
 * signal and invalidate after their commits), so a node that hears it reads
 * the new state; a change that rolled back is never announced. Payloads sent
 * at once are coalesced into one statement. Each app listens on one dedicated
 * `pg` client (not from knex's pools, whose connections come and go); when it
 * drops, the bus reconnects with backoff and then treats everything as
 * changed (every signal, every cache cleared), since news may have been
 * missed meanwhile. A node ignores its own news by the `from` token in the
 * payload (the sender's backend pid is one of the writer pool's, not the
 * listener's). On SQLite there is no bus: one node per file.
 */
import { EventEmitter } from 'node:events';
import crypto from 'node:crypto';
import pg from 'pg';
import type { Knex } from 'knex';
import type { Config } from '../config';
import { nodeId } from '../delivery/queue';
import type { Logger } from '../logger';
import { isSignalName, SIGNAL_NAMES, type Signals } from '../signals';
import { cacheRegistry } from '../util/read-cache';
import { postgresUrl } from './postgres';

export const CHANNEL = 'pigeon';
/** PostgreSQL refuses payloads of 8000 bytes or more; a longer key is sent as "forget everything". */
const MAX_PAYLOAD = 7000;
/** Distinct payloads waiting to be sent before keyed invalidations widen to whole caches. */
const MAX_PENDING = 1000;
const BACKOFF_MIN_MS = 100;
const BACKOFF_MAX_MS = 10_000;

/** What one notification says. `sync` markers carry nothing but let a caller know what came before arrived. */
export type BusNews =
  | { signal: string }
  | { cache: string; key?: string }
  | { sync: string };

export interface BusHandlers {
  /** News from another node. */
  received(news: BusNews): void;
  /** The connection was re-established after a drop: news may have been missed. */
  reconnected(): void;
}

export interface Bus {
  /** Sends `news` to the other nodes (after the caller's commit; coalesced). */
  publish(news: BusNews): void;
  close(): Promise<void>;
}

/** SQLite: one node per file, nothing to tell. */
export const noBus: Bus = { publish: () => undefined, close: async () => undefined };

/** `<node>-<pid>-<nonce>`: tells this app's own notifications from other apps' (two may share a process). */
export const busToken = (node: string): string => `${node}-${process.pid}-${crypto.randomBytes(6).toString('hex')}`;

export class PgBus extends EventEmitter implements Bus {
  private client: pg.Client | null = null;
  private closed = false;
  private retryMs = BACKOFF_MIN_MS;
  private retryTimer?: NodeJS.Timeout;
  private connects = 0;
  private pending = new Set<string>();
  private sending: Promise<void> | null = null;
  /** the listening session's backend pid (tests terminate it) */
  backendPid: number | null = null;

  constructor(
    private readonly url: string,
    private readonly db: Knex,
    readonly token: string,
    private readonly log: Logger,
    private readonly handlers: BusHandlers,
  ) {
    super();
  }

  /** Connects and listens; resolves once listening (a failure there is retried, not thrown). */
  async start(): Promise<void> {
    await this.connect();
  }

  publish(news: BusNews): void {
    if (this.closed) return;
    let payload = JSON.stringify({ from: this.token, ...news });
    // A long key, or many keys waiting while a statement is in flight: forget the whole cache instead, so the
    // payload and the set stay bounded (by the few cache and signal names).
    const tooMany = this.pending.size >= MAX_PENDING || Buffer.byteLength(payload) > MAX_PAYLOAD;
    if (tooMany && 'cache' in news) payload = JSON.stringify({ from: this.token, cache: news.cache });
    this.pending.add(payload);
    this.sending ??= this.send();
  }

  /** Resolves once everything published so far was sent (tests, shutdown). */
  async flushed(): Promise<void> {
    while (this.sending) await this.sending;
  }

  async close(): Promise<void> {
    await this.flushed();
    this.closed = true;
    clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  /** All payloads pending go out in one statement; more published meanwhile go in the next. */
  private async send(): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve)); // let one turn's worth of news gather
    try {
      while (this.pending.size) {
        const batch = [...this.pending];
        this.pending.clear();
        try {
          await notifyNodes(this.db, batch);
        } catch (err) {
          // The other nodes see the change within their caches' TTLs and their own timers, as without a bus.
          this.log.warn({ err, notifications: batch.length }, 'could not notify the other nodes; they will see the change later');
        }
      }
    } finally {
      this.sending = null;
    }
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client({ connectionString: this.url, keepAlive: true });
    let dropped = false;
    const drop = (err?: Error) => {
      if (dropped) return;
      dropped = true;
      if (this.client === client) this.client = null;
      this.backendPid = null;
      client.end().catch(() => undefined);
      if (this.closed) return;
      this.log.warn({ err, retryInMs: this.retryMs }, 'lost the notification connection to PostgreSQL; reconnecting');
      this.scheduleRetry();
    };
    client.on('error', drop);
    client.on('end', () => drop());
    client.on('notification', (msg) => this.receive(msg.payload));
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
      this.backendPid = (client as unknown as { processID: number }).processID;
    } catch (err) {
      drop(err as Error);
      return;
    }
    if (this.closed || dropped) return void client.end().catch(() => undefined);
    this.client = client;
    this.retryMs = BACKOFF_MIN_MS;
    if (this.connects++ > 0) {
      this.log.info('notification connection to PostgreSQL re-established; looking at everything again');
      this.handlers.reconnected();
      this.emit('reconnected');
    }
  }

  private scheduleRetry(): void {
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => void this.connect(), this.retryMs);
    this.retryTimer.unref();
    this.retryMs = Math.min(this.retryMs * 2, BACKOFF_MAX_MS);
  }

  private receive(payload: string | undefined): void {
    const news = parseNews(payload);
    if (!news || news.from === this.token) return;
    try {
      if (!('sync' in news)) this.handlers.received(news);
    } catch (err) {
      this.log.error({ err }, 'applying a notification from another node failed');
    }
    this.emit('news', news);
  }
}

/** One statement for any number of payloads, delivered in order (and, within one transaction, at its commit). */
function notifyNodes(db: Knex, payloads: string[]): Promise<unknown> {
  return db.raw('SELECT pg_notify(?, p) FROM unnest(?::text[]) AS p', [CHANNEL, payloads]);
}

/**
 * A CLI command on PostgreSQL (`pigeon keys revoke`, `pigeon domains delete`, `pigeon settings`, …): the
 * invalidations its writes make are collected on the tool's handle and sent to the running nodes once it is
 * done, so they apply at once rather than within the caches' TTLs. On SQLite nothing (one node per file).
 */
export function toolNews(config: Config, db: Knex): { send(): Promise<void> } {
  if (config.database.client !== 'postgres') return { send: async () => undefined };
  const from = busToken(`cli-${nodeId(config)}`);
  const payloads = new Set<string>();
  cacheRegistry(db).publish = (cache, key) => void payloads.add(JSON.stringify({ from, cache, ...(key === undefined ? {} : { key }) }));
  return {
    async send() {
      if (payloads.size) await notifyNodes(db, [...payloads]);
    },
  };
}

/** Bounded parse of a payload from the channel (anyone with database access can NOTIFY on it). */
function parseNews(payload: string | undefined): (BusNews & { from: string }) | undefined {
  if (!payload || payload.length > MAX_PAYLOAD) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(payload);
  } catch {
    return undefined;
  }
  if (!v || typeof v !== 'object') return undefined;
  const o = v as Record<string, unknown>;
  if (typeof o.from !== 'string') return undefined;
  if (typeof o.signal === 'string') return { from: o.from, signal: o.signal };
  if (typeof o.cache === 'string') return { from: o.from, cache: o.cache, ...(typeof o.key === 'string' ? { key: o.key } : {}) };
  if (typeof o.sync === 'string') return { from: o.from, sync: o.sync };
  return undefined;
}

/** What the bus acts on in its app. */
export interface BusWiring {
  config: Config;
  db: Knex;
  signals: Signals;
  log: Logger;
}

/**
 * On PostgreSQL: connects the app's signals and shared caches to the other nodes (resolves once listening,
 * or once the first attempt failed and retries are scheduled). On SQLite: the no-op bus.
 */
export async function startBus({ config, db, signals, log }: BusWiring): Promise<Bus> {
  if (config.database.client !== 'postgres') return noBus;
  const caches = cacheRegistry(db);
  const bus = new PgBus(postgresUrl(config), db, busToken(nodeId(config)), log, {
    received(news) {
      if ('signal' in news && isSignalName(news.signal)) signals.receive(news.signal);
      else if ('cache' in news) caches.forget(news.cache, news.key);
    },
    reconnected() {
      caches.forgetAll();
      for (const name of SIGNAL_NAMES) signals.receive(name);
    },
  });
  signals.publish = (signal) => bus.publish({ signal });
  caches.publish = (cache, key) => bus.publish(key === undefined ? { cache } : { cache, key });
  await bus.start();
  return bus;
}
