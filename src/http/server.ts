/**
 * The Koa application: global middleware, system routes (/healthz, /docs,
 * /v1/openapi.json), every module's /v1 routes, the compatibility layers (src/compat), 501 stand-ins for SPEC
 * endpoints not built yet, and 404/405 in the error shape. /metrics is not
 * here: it has its own listener (metrics.ts), off the API port.
 */
import Koa from 'koa';
import Router from '@koa/router';
import type { AppDeps } from '../deps';
import { ApiRouter } from './api';
import { ApiError } from './errors';
import { accessLog, errorHandler, requestContext } from './middleware';
import { buildOpenApi } from './openapi';
import { DOCS_HTML } from './docs';
import { SPEC_ROUTES } from './spec-routes';
import { createAuthenticator } from '../auth/authenticate';
import { compatRouter } from '../compat';

export type RouteRegistrar = (api: ApiRouter, deps: AppDeps) => void;

const VERSION: string = (require('../../../package.json') as { version: string }).version;

export function createHttpApp(deps: AppDeps, registrars: RouteRegistrar[]): Koa {
  const app = new Koa();
  app.proxy = deps.config.http.trustProxy;
  app.maxIpsCount = 1;
  app.silent = true; // errors are logged by errorHandler, without stack traces in responses

  const api = new ApiRouter(createAuthenticator(deps), deps.config.http.jsonLimitBytes);
  for (const register of registrars) register(api, deps);
  addNotImplemented(api);

  const system = systemRoutes(deps, api);
  app.use(requestContext());
  app.use(accessLog(deps.log, deps.metrics));
  app.use(errorHandler(deps.log));
  app.use(system.routes());
  app.use(api.routesMiddleware());
  // Postmark, Resend and SendGrid clients under /postmark, /resend, /sendgrid: outside /v1 and its OpenAPI.
  app.use(compatRouter(deps).routes());
  // Non-throwing mode sets Allow; errorHandler turns the bare 405/501 into the error shape.
  app.use(api.router.allowedMethods());
  return app;
}

function addNotImplemented(api: ApiRouter): void {
  for (const spec of SPEC_ROUTES) {
    if (api.has(spec.method, spec.path)) continue;
    api.add({
      ...spec,
      description: 'Not implemented in this version: answers 501.',
      responses: { 501: { description: 'Not implemented yet' } },
      handler() {
        throw new ApiError(501, 'api_error', 'not_implemented', `${spec.method.toUpperCase()} ${spec.path} is not implemented yet`);
      },
    });
  }
}

function systemRoutes(deps: AppDeps, api: ApiRouter): Router {
  const router = new Router();
  let openapi: Record<string, unknown> | undefined;
  router.get('/healthz', async (ctx) => {
    try {
      await deps.db.raw('select 1');
      ctx.body = { status: 'ok' };
    } catch {
      ctx.status = 503;
      ctx.body = { status: 'unavailable', reason: 'database unreachable' };
    }
  });
  router.get('/v1/openapi.json', (ctx) => {
    openapi ??= buildOpenApi(api.routes, deps.config.http.publicUrl, VERSION);
    ctx.body = openapi;
  });
  router.get('/docs', (ctx) => {
    ctx.type = 'html';
    ctx.body = DOCS_HTML;
  });
  return router;
}
