/**
 * The outbound MTA (issue 5): queue, pipeline, MX, SMTP pool, DKIM, retries,
 * bounces and the sandbox. What other modules use:
 * - `verpAddress` / `parseVerp` (inbound bounce listener),
 * - `dkimNote` (GET /v1/messages/{id}),
 * - the hook types `PrepareContent`, `SigningKeyLookup`, `PickSource`, `SourceSettled`, set on `Mta#hooks` or passed to `new Mta`.
 */
export { Mta } from './mta';
export type { DeliveryHooks } from './assemble';
export { verpAddress, parseVerp, bounceDomain } from './verp';
export { dkimNote } from './details';
export type { PrepareContent } from './content';
export type { SigningKey, SigningKeyLookup } from './dkim';
export type { PickSource, SourceSettled } from './source';
export type { Job, Source, SourceChoice, SourceRoute } from './types';
export { SIMULATOR_DOMAIN } from './sandbox';
