/**
 * What other modules use from messages: `enqueueRaw` (SMTP submission), and
 * the route registration, template compile pool and MIME builder wired in src/modules.ts.
 */
export { enqueueRaw } from './relay';
export type { EnqueueResult, RawSubmission } from './relay';
export type { AcceptedMessage } from './accept';
export { registerMessageRoutes } from './routes';
export { compilePoolOf } from './compile-pool';
export { mimePoolOf } from './mime-pool';
