/**
 * The compatibility layers: Postmark, Resend and SendGrid SDKs pointed at
 * Pigeon send through the native pipeline. On the API port each layer lives
 * under its prefix (/postmark, /resend, /sendgrid), outside /v1 and its
 * OpenAPI; `compat.<name>.port` also serves a layer at the root of its own
 * listener, for clients whose base URL cannot carry a path.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import Router from '@koa/router';
import type { AppDeps } from '../deps';
import type { Listener } from '../modules';
import { accessLog, errorHandler, requestContext } from '../http/middleware';
import { mountLayer, type CompatLayer } from './layer';
import { postmarkLayer } from './postmark/routes';
import { resendLayer } from './resend/routes';
import { sendgridLayer } from './sendgrid/routes';

export const LAYERS: CompatLayer[] = [postmarkLayer, resendLayer, sendgridLayer];

/** Every layer under its prefix, for the API port. */
export function compatRouter(deps: AppDeps): Router {
  const router = new Router();
  for (const layer of LAYERS) {
    const sub = new Router({ prefix: `/${layer.name}` });
    mountLayer(sub, layer, deps, `/${layer.name}`);
    router.use(sub.routes());
  }
  return router;
}

/** A layer at the root of its own port: the same middleware as the API port, then the layer. */
async function startLayerListener(deps: AppDeps, layer: CompatLayer, host: string, port: number): Promise<Listener> {
  const app = new Koa();
  app.proxy = deps.config.http.trustProxy;
  app.maxIpsCount = 1;
  app.silent = true;
  const router = new Router();
  mountLayer(router, layer, deps, `/${layer.name}`);
  app.use(requestContext()).use(accessLog(deps.log, deps.metrics)).use(errorHandler(deps.log)).use(router.routes()).use(router.allowedMethods());
  const server = http.createServer(app.callback());
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const close = () => new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
  return { name: `compat.${layer.name}`, host, port: (server.address() as AddressInfo).port, close };
}

/** The listeners configured with compat.<name>.port (none by default). */
export async function compatListeners(deps: AppDeps): Promise<Listener[]> {
  const started: Listener[] = [];
  try {
    for (const layer of LAYERS) {
      const { host, port } = deps.config.compat[layer.name];
      if (port !== null) started.push(await startLayerListener(deps, layer, host, port));
    }
  } catch (err) {
    await Promise.all(started.map((l) => l.close()));
    throw err;
  }
  return started;
}
