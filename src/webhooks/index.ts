/**
 * The webhooks module: routes, the dispatcher worker and the event sink that
 * turns every recorded event into delivery rows. Wired in src/modules.ts.
 */
import type { Module } from '../modules';
import { WebhookDispatcher } from './dispatcher';
import { registerWebhookRoutes } from './routes';
import { enqueueWebhookDeliveries } from './sink';

export const webhooksModule: Module = {
  name: 'webhooks',
  routes: registerWebhookRoutes,
  workers: (deps) => [new WebhookDispatcher(deps)],
  eventSinks: [enqueueWebhookDeliveries],
};

export { enqueueWebhookDeliveries } from './sink';
export { checkTarget, isPublicAddress } from './ssrf';
export { hmacHex, signatureHeader } from './signature';
