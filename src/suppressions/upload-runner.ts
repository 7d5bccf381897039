/**
 * Runs suppression uploads for one app and is the suppressions module's
 * background worker: at start it cleans up uploads a crashed process left
 * behind (with several nodes on PostgreSQL: this node's earlier processes'
 * only, as another node's upload may be running; an upload runs on the node
 * that accepted it); at stop it aborts the uploads still running, so each undoes its
 * rows before the database closes (what it cannot finish, the next start's
 * sweep does).
 */
import type { AppDeps } from '../deps';
import type { Worker } from '../modules';
import { ApiError } from '../http/errors';
import os from 'node:os';
import { importSuppressionCsv, UploadInput, UploadResult } from './upload';
import { recoverInterruptedUploads } from './upload-state';

const runners = new WeakMap<AppDeps, UploadRunner>();

/** The one runner of an app: the route and the worker list share it. */
export function uploadRunner(deps: AppDeps): UploadRunner {
  let runner = runners.get(deps);
  if (!runner) runners.set(deps, (runner = new UploadRunner(deps)));
  return runner;
}

const shuttingDown = () => new ApiError(503, 'api_error', 'shutting_down', 'the server is stopping; the upload was not saved, send it again');
/** Nobody reads this answer: the client has gone. It only ends the upload. */
const clientGone = () => new ApiError(499, 'invalid_request_error', 'client_closed_request', 'the client closed the connection');

export class UploadRunner implements Worker {
  readonly name = 'suppression-uploads';
  private readonly running = new Set<{ controller: AbortController; done: Promise<unknown> }>();
  private recovery: Promise<void> = Promise.resolve();
  private readonly node: string;

  constructor(private readonly deps: AppDeps) {
    this.node = deps.config.node.id || os.hostname();
  }

  start(): void {
    const { db, config, log } = this.deps;
    this.recovery = recoverInterruptedUploads(db, config.suppressions.uploadBatchRows, this.node)
      .then((n) => void (n && log.warn({ uploads: n }, 'removed the rows of suppression uploads interrupted by a stop')))
      .catch((err: unknown) => log.error({ err }, 'could not clean up interrupted suppression uploads'));
  }

  async stop(): Promise<void> {
    for (const upload of this.running) upload.controller.abort(shuttingDown());
    await Promise.allSettled([this.recovery, ...[...this.running].map((u) => u.done)]);
  }

  /** Imports the file; `onClientGone` registers the callback that aborts it when the client hangs up. */
  async run(input: Omit<UploadInput, 'signal' | 'batchRows'>, onClientGone: (abort: () => void) => void): Promise<UploadResult> {
    const controller = new AbortController();
    onClientGone(() => controller.abort(clientGone()));
    const done = importSuppressionCsv(this.deps.db, { ...input, batchRows: this.deps.config.suppressions.uploadBatchRows, signal: controller.signal, node: this.node });
    const entry = { controller, done };
    this.running.add(entry);
    try {
      return await done;
    } finally {
      this.running.delete(entry);
    }
  }
}
