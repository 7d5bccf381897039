/**
 * The shared things every module receives. Modules export plain service
 * functions taking what they need from here; there is no container magic.
 */
import type { Clock } from './clock';
import type { Config } from './config';
import type { Db } from './db';
import type { Writer } from './db/writer';
import type { Handoff } from './delivery/handoff';
import type { Logger } from './logger';
import type { Metrics } from './metrics';
import type { Signals } from './signals';
import type { SecuritySettings } from './auth/settings';
import type { AuthFailureLimiter, TokenBuckets } from './auth/rate-limit';

export interface AppDeps {
  config: Config;
  db: Db;
  /** Read-only connections for lookups and GETs (src/db/reader.ts); they never wait behind the writer. */
  reader: Db;
  /** The batching writer every hot-path write goes through (src/db/writer.ts). */
  writer: Writer;
  /** Fresh sends to the MTA in memory, already leased in the accept transaction (src/delivery/handoff.ts). */
  handoff: Handoff;
  clock: Clock;
  log: Logger;
  metrics: Metrics;
  signals: Signals;
  settings: SecuritySettings;
  buckets: TokenBuckets;
  failures: AuthFailureLimiter;
}
