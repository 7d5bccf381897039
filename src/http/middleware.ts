/**
 * Middleware every request passes: request id, client address, access log,
 * metrics, and the error handler that turns anything thrown into the one
 * error shape (and a 500 into a generic message, the details logged only).
 */
import type { Context, Middleware, Next } from 'koa';
import type { Logger } from '../logger';
import { normalizeAddress } from '../auth/allowlist';
import { ApiError } from './errors';
import { identifierBytes } from '../ids';
import type { RequestState } from './context';
import type { Metrics } from '../metrics';

const INCOMING_ID = /^[A-Za-z0-9._-]{1,64}$/;

export function requestContext(): Middleware {
  return async (ctx: Context, next: Next) => {
    const incoming = ctx.get('x-request-id');
    const requestId = INCOMING_ID.test(incoming) ? incoming : `req_${identifierBytes(9).toString('base64url')}`;
    // With trustProxy, Koa reads X-Forwarded-For; maxIpsCount=1 takes the entry our proxy appended.
    const clientIp = normalizeAddress(ctx.app.proxy ? ctx.ips[0] || ctx.ip : ctx.socket.remoteAddress);
    Object.assign(ctx.state as RequestState, { requestId, clientIp });
    ctx.set('X-Request-Id', requestId);
    await next();
  };
}

export function errorHandler(log: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.body === undefined || ctx.body === null) {
        if (ctx.status === 404) throw new ApiError(404, 'not_found_error', 'route_not_found', `no route for ${ctx.method} ${ctx.path}`);
        if (ctx.status === 405) throw new ApiError(405, 'invalid_request_error', 'method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}`);
        if (ctx.status === 501) throw new ApiError(501, 'api_error', 'not_implemented', `${ctx.method} is not supported`);
      }
    } catch (err) {
      const state = ctx.state as RequestState;
      const apiError = toApiError(err);
      if (!(err instanceof ApiError) && apiError.status >= 500) log.error({ err, requestId: state.requestId, route: state.routeName }, 'request failed');
      ctx.status = apiError.status;
      if (apiError.headers) ctx.set(apiError.headers);
      ctx.body = {
        error: {
          type: apiError.type,
          code: apiError.code,
          message: apiError.message,
          ...(apiError.param ? { param: apiError.param } : {}),
          ...(apiError.details && apiError.details.length > 1 ? { details: apiError.details } : {}),
          request_id: state.requestId,
        },
      };
    }
  };
}

function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const status = (err as { status?: number }).status;
  if (status === 405) return new ApiError(405, 'invalid_request_error', 'method_not_allowed', (err as Error).message);
  if (status === 501) return new ApiError(501, 'api_error', 'not_implemented', 'this endpoint is not implemented yet');
  if (status && status >= 400 && status < 500) {
    return new ApiError(status, 'invalid_request_error', 'bad_request', 'the request could not be processed');
  }
  return new ApiError(500, 'api_error', 'internal_error', 'an internal error occurred; it has been logged');
}

export function accessLog(log: Logger, metrics: Metrics): Middleware {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const state = ctx.state as RequestState;
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      // Only route templates become labels: a raw path (a 405 on /v1/messages/<anything>) would let
      // unauthenticated callers create a metrics series per request.
      const route = state.routeName ?? (ctx as { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
      metrics.httpRequests.inc({ method: ctx.method, route, status: String(ctx.status) });
      metrics.httpDuration.observe({ method: ctx.method, route }, seconds);
      log.info(
        { requestId: state.requestId, method: ctx.method, route, status: ctx.status, ms: Math.round(seconds * 1000), ip: state.clientIp, key: undefined, keyId: state.caller?.keyId },
        'request',
      );
    }
  };
}
