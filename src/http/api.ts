/**
 * Route definitions. Every /v1 endpoint is declared once with its scope, its
 * zod schemas and its handler; from that one declaration come the Koa route,
 * the authentication and scope check, request validation (400 for path/query,
 * 415/422 for the body) and the OpenAPI operation. A route cannot forget its
 * scope check because the scope is a required field.
 */
import Router from '@koa/router';
import { koaBody } from 'koa-body';
import type { Context, Middleware } from 'koa';
import { z } from 'zod';
import type { Scope } from '../auth/scopes';
import { ApiError, fromZodError } from './errors';
import type { Caller, RequestState } from './context';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface ResponseSpec {
  description: string;
  schema?: z.ZodType;
  contentType?: string;
}

export interface HandlerInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  caller: Caller;
  ctx: Context;
  /** The raw request body (JSON routes), e.g. for idempotency hashing. */
  rawBody: string;
}

/** A handler returns a status and body, or sets ctx.body itself and returns undefined. */
export type HandlerResult = { status: number; body?: unknown; headers?: Record<string, string> } | undefined;

export interface RouteSpec<P extends z.ZodType = z.ZodType, Q extends z.ZodType = z.ZodType, B extends z.ZodType = z.ZodType> {
  method: Method;
  /** OpenAPI-style path: /v1/messages/{id} */
  path: string;
  /** Required scope; `null` only for routes that need no API key at all. */
  scope: Scope | null;
  tag: string;
  summary: string;
  description?: string;
  /** A Pigeon addition beyond SPEC.md (marked x-pigeon-extension in OpenAPI). */
  extension?: boolean;
  /**
   * The route changes what live mail does (keys, security settings, suppressions, pools, domain removal):
   * a sandbox key gets 403 live_key_required. The rule: a sandbox key never changes live mail.
   */
  liveOnly?: boolean;
  /** Only an admin's console session may call it (403 operator_only for members and every API key). */
  operatorOnly?: boolean;
  params?: P;
  query?: Q;
  body?: B;
  bodyType?: 'json' | 'multipart';
  bodyLimitBytes?: number;
  responses: Record<number, ResponseSpec>;
  handler(input: HandlerInput<z.output<P>, z.output<Q>, z.output<B>>): Promise<HandlerResult> | HandlerResult;
}

export type AnyRoute = RouteSpec<z.ZodType, z.ZodType, z.ZodType>;

type RouterMiddleware = ReturnType<Router['routes']>;

export type Authenticator = (ctx: Context, scope: Scope) => Promise<Caller>;

export class ApiRouter {
  /**
   * Every route: the methods allowedMethods knows (501; Allow comes from ctx.matched), and what
   * test/http/router-groups.test.ts holds the groups to.
   */
  readonly router = new Router();
  readonly routes: AnyRoute[] = [];
  /**
   * The same routes split by their first two segments (`/v1/messages`), for dispatch: @koa/router tests a
   * request against each of its routes in turn, and the 86 of /v1 cost a send ~8 µs of the main thread.
   */
  private readonly groups = new Map<string, Router>();
  /** Routes whose first two segments are not both lower-case literals (`/u/{token}`, `/v1`): in every group */
  private readonly loose: Registered[] = [];
  /**
   * The loose routes alone, for a path of no group (the compatibility layers' `/postmark/email`, a 404): no
   * other route can match it, and every compatible send was tested against all of them.
   */
  private readonly looseRouter = new Router();

  constructor(
    private readonly authenticate: Authenticator,
    private readonly defaultJsonLimit: number,
  ) {}

  add<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType>(spec: RouteSpec<P, Q, B>): void {
    const route = spec as unknown as AnyRoute;
    this.routes.push(route);
    this.register(route.method, koaPathOf(route.path), [...this.bodyParser(route), this.run(route)]);
  }

  /**
   * Middleware run before the route at `method` and `path` (OpenAPI style, like `add`'s), e.g. to clean up
   * after it. It must come first: the route's own handler ends the chain.
   */
  before(method: Method, path: string, middleware: Middleware): void {
    if (this.has(method, path)) throw new Error(`${method} ${path}: middleware must be added before the route`);
    this.register(method, koaPathOf(path), [middleware]);
  }

  /**
   * Dispatch: the request's group only (its routes are the only ones whose path can match), or the loose
   * routes when no group has its prefix. A 404 or 405 is then told by the same ctx.matched as from the whole
   * router (allowedMethods, on the whole router, still knows every method for 501).
   */
  routesMiddleware(): RouterMiddleware {
    const loose = this.looseRouter.routes();
    const byGroup = new Map([...this.groups].map(([prefix, router]) => [prefix, router.routes()]));
    return (ctx, next) => (byGroup.get(groupOf(ctx.path)) ?? loose)(ctx, next);
  }

  private register(method: Method, koaPath: string, middleware: Middleware[]): void {
    const route: Registered = { path: koaPath, methods: [method.toUpperCase()], middleware };
    this.router.register(route.path, route.methods, route.middleware);
    const prefix = groupOf(koaPath);
    if (!LITERAL_PREFIX.test(prefix)) {
      // a parameter among its first two segments (/u/:token), or fewer than two: it may match a path of any group
      this.loose.push(route);
      for (const group of [this.looseRouter, ...this.groups.values()]) group.register(route.path, route.methods, route.middleware);
      return;
    }
    let group = this.groups.get(prefix);
    if (!group) {
      // the loose routes registered so far, first: a group keeps the order of the whole router
      this.groups.set(prefix, (group = new Router()));
      for (const r of this.loose) group.register(r.path, r.methods, r.middleware);
    }
    group.register(route.path, route.methods, route.middleware);
  }

  has(method: Method, path: string): boolean {
    return this.routes.some((r) => r.method === method && r.path === path);
  }

  private bodyParser(route: AnyRoute): Middleware[] {
    if (!route.body) return [];
    const multipart = route.bodyType === 'multipart';
    const wanted = multipart ? 'multipart/form-data' : 'application/json';
    const limit = route.bodyLimitBytes ?? this.defaultJsonLimit;
    const parse = koaBody({
      json: !multipart,
      multipart,
      urlencoded: false,
      text: false,
      jsonLimit: limit,
      jsonStrict: true,
      includeUnparsed: !multipart,
      // Empty files reach the handler, which can say why an empty upload is refused.
      formidable: multipart ? { maxFileSize: limit, maxFiles: 1, maxFields: 20, allowEmptyFiles: true, minFileSize: 0 } : undefined,
      onError: (err: Error) => {
        throw bodyError(err, limit, multipart);
      },
    });
    // Authenticate and check the type before reading a (possibly large) body; one middleware, as it runs on every send.
    const beforeBody: Middleware = async (ctx, next) => {
      const state = ctx.state as RequestState;
      state.routeName = route.path;
      if (route.scope) state.caller = requireMode(route, await this.authenticate(ctx, route.scope));
      if (!ctx.is(wanted)) {
        throw new ApiError(415, 'invalid_request_error', 'unsupported_media_type', `Content-Type must be ${wanted}`);
      }
      await next();
    };
    return [beforeBody, parse];
  }

  private run(route: AnyRoute): Middleware {
    return async (ctx) => {
      const state = ctx.state as RequestState;
      state.routeName = route.path; // for metrics and logs (already set on routes with a body)
      if (route.scope && !state.caller) state.caller = requireMode(route, await this.authenticate(ctx, route.scope));
      const params = parsePart(route.params, ctx.params, 400, ['path']);
      const query = parsePart(route.query, ctx.query, 400, []);
      const body = route.body ? parsePart(route.body, readBody(ctx, route), 422, []) : undefined;
      const rawBody = (ctx.request.body as Record<symbol, string> | undefined)?.[Symbol.for('unparsedBody')] ?? '';
      const result = await route.handler({ params, query, body, caller: state.caller as Caller, ctx, rawBody });
      if (!result) return;
      ctx.status = result.status;
      if (result.headers) ctx.set(result.headers);
      if (result.body !== undefined) ctx.body = result.body;
    };
  }
}

/** A group's segments are literal, so a path can only match routes of its own group (or loose ones). */
const LITERAL_PREFIX = /^\/[a-z0-9._-]+\/[a-z0-9._-]+$/;

interface Registered {
  path: string;
  methods: string[];
  middleware: Middleware[];
}

/** `/v1/messages/{id}` → `/v1/messages/:id` (in @koa/router's path-to-regexp, `{…}` is an optional part) */
const koaPathOf = (path: string): string => path.replace(/\{(\w+)\}/g, ':$1');

/** The first two segments of a path, lower-cased (@koa/router matches case-insensitively). */
function groupOf(path: string): string {
  const second = path.indexOf('/', 1);
  const third = second < 0 ? -1 : path.indexOf('/', second + 1);
  return (third < 0 ? path : path.slice(0, third)).toLowerCase();
}

export const liveKeyRequired = (what = 'this request') =>
  new ApiError(403, 'permission_error', 'live_key_required',
    `${what} changes what live mail does, so it needs a live key (svc_live_…); a sandbox key never changes live mail`);

function requireMode(route: AnyRoute, caller: Caller): Caller {
  if (route.operatorOnly && caller.user?.role !== 'admin') {
    throw new ApiError(403, 'permission_error', 'operator_only', `${route.method.toUpperCase()} ${route.path} is for an admin signed in to the console; API keys cannot call it`);
  }
  // Operator routes act on the whole appliance (shared addresses, every account's queue): never from a sandbox view.
  if (route.operatorOnly && caller.mode !== 'live') throw liveKeyRequired(`${route.method.toUpperCase()} ${route.path}`);
  if (route.liveOnly && caller.mode !== 'live') throw liveKeyRequired(`${route.method.toUpperCase()} ${route.path}`);
  return caller;
}

function readBody(ctx: Context, route: AnyRoute): unknown {
  if (route.bodyType !== 'multipart') return ctx.request.body;
  return { ...(ctx.request.body as object), ...(ctx.request.files as object) };
}

function parsePart(schema: z.ZodType | undefined, value: unknown, status: 400 | 422, prefix: PropertyKey[]): unknown {
  if (!schema) return value;
  const result = schema.safeParse(value);
  if (!result.success) throw fromZodError(result.error, status, status === 400 && prefix.length ? [] : prefix);
  return result.data;
}

/** formidable's error code for more files than maxFiles (its errors carry numeric codes). */
const FORMIDABLE_MAX_FILES_EXCEEDED = 1015;

function bodyError(err: Error & { status?: number; httpCode?: number; type?: string; code?: number }, limit: number, multipart = false): ApiError {
  if (multipart && err.code === FORMIDABLE_MAX_FILES_EXCEEDED) {
    return new ApiError(422, 'invalid_request_error', 'too_many_files', 'upload exactly one file', 'file');
  }
  // formidable reports a too-large file as httpCode 413 (maxFileSize or maxTotalFileSize).
  if (err.status === 413 || err.httpCode === 413 || err.type === 'entity.too.large' || /maxFileSize|too large/i.test(err.message)) {
    return new ApiError(413, 'invalid_request_error', 'payload_too_large', `request body exceeds ${limit} bytes`);
  }
  if (err.status === 415) {
    return new ApiError(415, 'invalid_request_error', 'unsupported_media_type', 'unsupported content encoding');
  }
  if (multipart) return new ApiError(400, 'invalid_request_error', 'malformed_body', 'request body is not valid multipart/form-data');
  return new ApiError(400, 'invalid_request_error', 'malformed_body', 'request body is not valid JSON (an object or array is expected)');
}
