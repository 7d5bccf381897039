/**
 * What every compatibility layer (Postmark, Resend, SendGrid) shares: a route
 * declaration with a required scope, the provider's key header mapped onto
 * Pigeon's authenticator (same key checks, IP allowlist, rate limit, scope),
 * a bounded JSON body parser, and one place where any error becomes the
 * provider's error shape. A layer only translates: its handlers build native
 * send bodies and call the native send services.
 */
import Router from '@koa/router';
import { koaBody } from 'koa-body';
import type { Context, Middleware } from 'koa';
import type { AppDeps } from '../deps';
import type { Scope } from '../auth/scopes';
import { createAuthenticator, type SecretOf } from '../auth/authenticate';
import type { Caller, RequestState } from '../http/context';
import { ApiError } from '../http/errors';

export interface CompatInput {
  ctx: Context;
  caller: Caller;
  /** The parsed JSON body (routes with `body: true`), unchecked: the layer validates it. */
  body: unknown;
}

export interface CompatReply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface CompatRoute {
  method: 'get' | 'post' | 'patch';
  /** Koa path relative to the layer's prefix, e.g. /email or /emails/:id */
  path: string;
  scope: Scope;
  body?: boolean;
  handler(input: CompatInput): Promise<CompatReply>;
}

export interface ProviderError {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export interface CompatLayer {
  name: 'postmark' | 'resend' | 'sendgrid';
  /** Where the provider's SDKs carry the key. */
  secretOf: SecretOf;
  /** Any Pigeon error as the provider would have answered it. */
  toProviderError(err: ApiError): ProviderError;
  routes(deps: AppDeps): CompatRoute[];
}

/** The layer's routes on `router` (prefixed /postmark etc. on the API port, bare on a layer's own listener). */
export function mountLayer(router: Router, layer: CompatLayer, deps: AppDeps, routePrefix: string): void {
  const authenticate = createAuthenticator(deps, layer.secretOf, { allowSession: false }); // API keys only
  for (const route of layer.routes(deps)) {
    const name = `${routePrefix}${route.path}`;
    const auth: Middleware = async (ctx, next) => {
      (ctx.state as RequestState).caller = await authenticate(ctx, route.scope);
      await next();
    };
    const run: Middleware = async (ctx) => {
      const state = ctx.state as RequestState;
      const reply = await route.handler({ ctx, caller: state.caller as Caller, body: ctx.request.body });
      ctx.status = reply.status;
      if (reply.headers) ctx.set(reply.headers);
      ctx.body = reply.body ?? '';
    };
    const parse = route.body ? [jsonOnly, jsonBody(deps)] : [];
    router.register(route.path, [route.method.toUpperCase()], [named(name), providerErrors(layer, deps), auth, ...parse, run]);
  }
}

const named = (name: string): Middleware => async (ctx, next) => {
  (ctx.state as RequestState).routeName = name;
  await next();
};

const jsonOnly: Middleware = async (ctx, next) => {
  if (!ctx.is('application/json')) throw new ApiError(415, 'invalid_request_error', 'unsupported_media_type', 'Content-Type must be application/json');
  await next();
};

/** Bounded like the native batch: a provider request may carry several full-size messages. */
function jsonBody(deps: AppDeps): Middleware {
  const limit = Math.round(deps.config.limits.maxMessageBytes * 1.4) * 2 + 64 * 1024;
  return koaBody({
    json: true, multipart: false, urlencoded: false, text: false, jsonLimit: limit, jsonStrict: true,
    onError: (err: Error & { status?: number; type?: string }) => {
      if (err.status === 413 || err.type === 'entity.too.large') throw new ApiError(413, 'invalid_request_error', 'payload_too_large', `request body exceeds ${limit} bytes`);
      throw new ApiError(400, 'invalid_request_error', 'malformed_body', 'request body is not valid JSON');
    },
  });
}

/** Every error of the layer's routes in the provider's shape; an unexpected one is logged and answered as a generic 500. */
function providerErrors(layer: CompatLayer, deps: AppDeps): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      const state = ctx.state as RequestState;
      let apiError = err instanceof ApiError ? err : undefined;
      if (!apiError) {
        deps.log.error({ err, requestId: state.requestId, route: state.routeName }, 'request failed');
        apiError = new ApiError(500, 'api_error', 'internal_error', `an internal error occurred; it has been logged (request ${state.requestId})`);
      }
      const shaped = layer.toProviderError(apiError);
      ctx.status = shaped.status;
      if (apiError.headers) ctx.set(apiError.headers);
      if (shaped.headers) ctx.set(shaped.headers);
      ctx.body = shaped.body;
    }
  };
}
