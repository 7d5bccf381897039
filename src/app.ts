/**
 * createApp(config) builds the whole appliance — database, HTTP API, SMTP
 * listeners and background workers — starts it, and returns handles with
 * close(). main.ts only loads config and calls this; tests call it with port 0
 * and a temporary dataDir.
 */
import { Handoff } from './delivery/handoff';
import http from 'node:http';
import { Counter, Histogram } from 'prom-client';
import type { AddressInfo } from 'node:net';
import type { DestinationStream } from 'pino';
import { Clock, systemClock } from './clock';
import { Config, ConfigInput, parseConfig } from './config';
import { Db, isPostgres, migrateLatest, openCheckpointConnection, openDatabase, walSyncOf } from './db';
import { WalCheckpointer } from './db/checkpointer';
import { loadWriteOrder, type WriteOrder } from './db/write-order';
import { attachReader, openReader } from './db/reader';
import { Writer } from './db/writer';
import { startBus, type Bus } from './db/notify';
import type { AppDeps } from './deps';
import { createLogger, type Logger } from './logger';
import { createMetrics, type Metrics, MetricsListener, startMetricsListener } from './metrics';
import { Signals } from './signals';
import { SecuritySettings } from './auth/settings';
import { AuthFailureLimiter, TokenBuckets } from './auth/rate-limit';
import { bootstrapIfEmpty } from './auth/bootstrap';
import { secretKeyMismatch } from './domains/secret-key-check';
import { createHttpApp } from './http/server';
import { consoleStatic } from './http/console-static';
import { addEventSink } from './events/record';
import { Listener, MODULES, Worker } from './modules';

export type { Listener, Worker };

export interface AppOptions {
  clock?: Clock;
  /** Where JSON logs go (tests capture them); default stdout. */
  logStream?: DestinationStream;
}

export interface App {
  config: Config;
  deps: AppDeps;
  db: Db;
  http: { server: http.Server; port: number; url: string };
  /** The Prometheus listener (metrics.host:metrics.port); absent when metrics.enabled is false. */
  metrics?: MetricsListener;
  listeners: Record<string, Listener>;
  workers: Worker[];
  /** Wake-ups and cache invalidations to and from the other nodes (src/db/notify.ts; a no-op on SQLite). */
  bus: Bus;
  /** The sandbox key created on first start (only on the start that made it). */
  bootstrapKey?: string;
  close(): Promise<void>;
}

export async function createApp(input: Config | ConfigInput = {}, options: AppOptions = {}): Promise<App> {
  const config = parseConfig(input);
  const clock = options.clock ?? systemClock;
  const log = createLogger(config.log.level, options.logStream);
  // checkpoints and the COMMIT's fsync run beside the writer (db/checkpointer.ts, db/wal-sync.ts)
  const db = openDatabase(config, undefined, { autoCheckpoint: false, syncBeside: true });
  await migrateLatest(db);
  const writeOrder = isPostgres(db) ? undefined : await loadWriteOrder(db);
  const bootstrapKey = await bootstrapIfEmpty(db, clock.now());
  // A node whose secret.key cannot open the database's DKIM keys would defer every signed message: refuse to start.
  const foreignKey = await secretKeyMismatch(db, config.dataDir);
  if (foreignKey) {
    await db.destroy();
    throw new Error(foreignKey);
  }
  const reader = openReader(config);
  attachReader(db, reader);

  const appMetrics = createMetrics();
  const deps: AppDeps = {
    config,
    db,
    reader,
    writer: createWriter(db, config, appMetrics, log, writeOrder),
    handoff: new Handoff(),
    clock,
    log,
    metrics: appMetrics,
    signals: new Signals(),
    settings: new SecuritySettings(db, clock),
    buckets: new TokenBuckets(clock, config.rateLimit.requestsPerSecond, config.rateLimit.burst),
    failures: new AuthFailureLimiter(clock, config.rateLimit.authFailuresPerMinute),
  };

  const bus = await startBus(deps);
  for (const sink of MODULES.flatMap((m) => m.eventSinks ?? [])) addEventSink(sink);
  const workers: Worker[] = MODULES.flatMap((m) => m.workers?.(deps) ?? []);
  const listeners: Record<string, Listener> = {};
  let metrics: MetricsListener | undefined;
  try {
    for (const m of MODULES) for (const l of (await m.listeners?.(deps)) ?? []) listeners[l.name] = l;
    if (config.metrics.enabled) metrics = listeners.metrics = await startMetricsListener(config.metrics, deps.metrics.registry);
  } catch (err) {
    await abandonStart(listeners, bus, deps);
    throw err;
  }
  const handle = createHttpApp(deps, MODULES.flatMap((m) => (m.routes ? [m.routes] : []))).use(consoleStatic()).callback();
  let stopping = false;
  const server = http.createServer((req, res) => {
    // Once stopping, keep-alive clients are told to reconnect elsewhere, so their connections end and the
    // server can close before the database does.
    if (stopping) res.setHeader('Connection', 'close');
    void handle(req, res);
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.http.port, config.http.host, () => resolve());
  }).catch(async (err: unknown) => {
    await abandonStart(listeners, bus, deps);
    throw err;
  });
  const port = (server.address() as AddressInfo).port;
  for (const worker of workers) worker.start();

  let closing: Promise<void> | undefined;
  const close = () => {
    stopping = true;
    return (closing ??= shutdown({ server, listeners, workers, db, deps, bus }));
  };
  return {
    config,
    deps,
    db,
    http: { server, port, url: `http://${formatHost(config.http.host)}:${port}` },
    metrics,
    listeners,
    workers,
    bus,
    bootstrapKey,
    close,
  };
}

/** SQLite: checkpoint once a second while commits happen; the writer's connection rewinds the WAL past 16 MiB (4 KiB pages). */
const CHECKPOINT_INTERVAL_MS = 1000;
const WAL_RESTART_FRAMES = 4096;

/** The shared writer, with `pigeon_writer_commit_weight` showing how much each commit carried. */
function createWriter(db: Db, config: Config, metrics: Metrics, log: Logger, writeOrder: WriteOrder | undefined): Writer {
  const { groupCommit, groupCommitWindowMs, groupCommitMaxMessages } = config.messages;
  const onCheckpointError = (err: unknown) => log.warn({ err }, 'WAL checkpoint failed; the next one will try again');
  const walSync = walSyncOf(db);
  if (walSync) walSync.onFailure = (err) => log.fatal({ err }, 'fsync of the WAL failed: every write is refused until pigeon restarts');
  const weight = new Histogram({
    name: 'pigeon_writer_commit_weight', help: 'Work (messages) committed per writer transaction',
    buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000], registers: [metrics.registry],
  });
  const writer = new Writer(db, {
    maxWeight: groupCommit ? groupCommitMaxMessages : 1, windowMs: groupCommitWindowMs, onCommit: (_n, w) => weight.observe(w),
    counterFlushMs: config.database.counterFlushMs ?? (isPostgres(db) ? 1000 : 0),
    checkpoints: isPostgres(db) ? undefined : new WalCheckpointer(openCheckpointConnection(config), {
      intervalMs: CHECKPOINT_INTERVAL_MS, restartFrames: WAL_RESTART_FRAMES, onError: onCheckpointError,
    }),
    onCheckpointError,
    writeOrder,
    walSync,
  });
  new Counter({
    name: 'pigeon_writer_busy_seconds_total', help: 'Time the shared writer spent in transactions: near wall time, it is the limit',
    registers: [metrics.registry], collect() { this.reset(); this.inc(writer.busyTimeMs / 1000); },
  });
  return writer;
}

/** A start that failed (a port taken, a bad certificate) must not leave listeners, the writer or the database open. */
async function abandonStart(listeners: Record<string, Listener>, bus: Bus, deps: AppDeps): Promise<void> {
  await Promise.all(Object.values(listeners).map((l) => l.close()));
  await bus.close();
  await deps.writer.close();
  await Promise.all([deps.reader.destroy(), deps.db.destroy()]);
}

function formatHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

/** Stop accepting, let in-flight work finish within the timeout, then close the database. */
async function shutdown(parts: { server: http.Server; listeners: Record<string, Listener>; workers: Worker[]; db: Db; deps: AppDeps; bus: Bus }): Promise<void> {
  const { server, listeners, workers, db, deps, bus } = parts;
  const timeout = deps.config.http.shutdownTimeoutMs;
  const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const graceful = Promise.all([
    serverClosed,
    ...Object.values(listeners).map((l) => l.close()),
    ...workers.map((w) => w.stop()),
  ]);
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeout);
  });
  const outcome = await Promise.race([graceful.then(() => 'done' as const), expired]);
  clearTimeout(timer);
  if (outcome === 'timeout') {
    deps.log.warn({ timeoutMs: timeout }, 'shutdown timed out; closing remaining connections');
    server.closeAllConnections();
  }
  await deps.writer.close(); // work already handed to the writer is committed before the database closes
  await bus.close(); // news of those commits goes out first
  await Promise.all([deps.reader.destroy(), db.destroy()]);
  deps.log.info('pigeon stopped');
  deps.log.flush?.();
}
