/**
 * The modules that make up the appliance. Each contributes some of: API
 * routes, background workers, network listeners and event sinks. createApp
 * wires them in this order; adding a module is one entry here.
 */
import type { AppDeps } from './deps';
import type { ApiRouter } from './http/api';
import type { EventSink } from './events/record';
import { registerAuthRoutes } from './auth/routes';
import { registerUserRoutes } from './users/routes';
import { Mta } from './delivery/mta';
import { compilePoolOf, mimePoolOf, registerMessageRoutes } from './messages';
import { registerDomainRoutes } from './domains/routes';
import { getSigningKey } from './domains/signing';
import { createRecheckWorker } from './domains/worker';
import { registerPoolRoutes } from './pools/routes';
import { poolDeliveryHooks } from './pools/selector';
import { createPoolsPruneWorker, createPoolsWorker } from './pools/worker';
import { createReputationWatch } from './reputation/watch';
import { smtpListeners } from './smtp';
import { webhooksModule } from './webhooks';
import { registerTrackingRoutes } from './tracking/routes';
import { trackingHook } from './tracking/hook';
import { registerAnalyticsRoutes } from './analytics/routes';
import { registerOverviewRoutes } from './overview/routes';
import { registerOperatorRoutes } from './operator/routes';
import { applyRollup } from './analytics/rollup';
import { registerSuppressionRoutes } from './suppressions/routes';
import { uploadRunner } from './suppressions/upload-runner';
import { TlsReportWorker } from './tls-policy/worker';
import { compatListeners } from './compat';
import { leaderOf, singleton } from './db/leader';

/** A background loop (MTA, webhook dispatcher, re-checks…), or a thread pool requests wait on. */
export interface Worker {
  name: string;
  /**
   * True for a thread pool that requests wait on (MIME building, template compiles) rather than a loop of its
   * own: stopping it does not pause any background work, it only moves that work to the main thread.
   */
  servesRequests?: boolean;
  start(): void;
  /** Stop taking new work and wait for work in flight (createApp bounds the wait). */
  stop(): Promise<void>;
  /** Process everything that is due now and resolve when done (tests with a fake clock). */
  runOnce?(): Promise<void>;
}

/** A network listener other than HTTP (SMTP submission, inbound). */
/** Background loops only: what a caller stops to pause the appliance's own work (the benches' MTA-paused runs). */
export const isBackground = (w: Worker): boolean => !w.servesRequests;

export interface Listener {
  name: string;
  host: string;
  port: number;
  close(): Promise<void>;
}

export interface Module {
  name: string;
  routes?(api: ApiRouter, deps: AppDeps): void;
  workers?(deps: AppDeps): Worker[];
  listeners?(deps: AppDeps): Promise<Listener[]>;
  eventSinks?: EventSink[];
}

/**
 * Workers wrapped in `singleton` run on one elected node when several share a PostgreSQL database
 * (db/leader.ts); the others are safe on every node (claims with SKIP LOCKED, or per-node state).
 */
export const MODULES: Module[] = [
  { name: 'election', workers: (deps) => [leaderOf(deps)] },
  { name: 'auth', routes: registerAuthRoutes },
  { name: 'users', routes: registerUserRoutes },
  { name: 'messages', routes: registerMessageRoutes, workers: (deps) => [compilePoolOf(deps), mimePoolOf(deps)] },
  { name: 'domains', routes: registerDomainRoutes, workers: (deps) => [singleton(deps, () => createRecheckWorker(deps))] },
  { name: 'pools', routes: registerPoolRoutes, workers: (deps) => [createPoolsWorker(deps), singleton(deps, () => createPoolsPruneWorker(deps))] },
  { name: 'reputation', workers: (deps) => [singleton(deps, () => createReputationWatch(deps))] },
  {
    name: 'delivery',
    workers: (deps) => [
      new Mta(deps, {
        signingKeys: (accountId, domain) => getSigningKey(deps.db, deps.config.dataDir, accountId, domain),
        prepareContent: trackingHook(deps.config),
        ...poolDeliveryHooks(deps),
      }),
    ],
  },
  { name: 'tls-reports', workers: (deps) => [singleton(deps, () => new TlsReportWorker(deps))] },
  { name: 'smtp', listeners: smtpListeners },
  webhooksModule,
  { name: 'tracking', routes: registerTrackingRoutes },
  { name: 'analytics', routes: registerAnalyticsRoutes, eventSinks: [applyRollup] },
  { name: 'overview', routes: registerOverviewRoutes },
  { name: 'operator', routes: registerOperatorRoutes },
  { name: 'suppressions', routes: registerSuppressionRoutes, workers: (deps) => [uploadRunner(deps)] },
  { name: 'compat', listeners: compatListeners },
];
