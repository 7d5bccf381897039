/**
 * The outbound MTA (issue 5): queue, pipeline, MX, SMTP pool, DKIM, retries,
 * bounces and the sandbox. What other modules use:
 * - `verpAddress` / `parseVerp` (inbound bounce listener),
 * - `listAttempts` / `dkimNote` (GET /v1/messages/{id}),
 * - the hook types `PrepareContent`, `SigningKeyLookup`, `PickSource`.
 */
export { Mta, type DeliveryHooks } from './mta';
export { verpAddress, parseVerp, bounceDomain } from './verp';
export { listAttempts, dkimNote, type AttemptView } from './attempts';
export type { PrepareContent } from './content';
export type { SigningKey, SigningKeyLookup } from './dkim';
export type { PickSource } from './source';
export type { Job, Source, SourceChoice } from './types';
export { SIMULATOR_DOMAIN } from './sandbox';
