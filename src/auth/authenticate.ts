/**
 * Who is calling: Bearer key → key record → account, then the checks in the
 * order a caller can act on them: 401 (key), 403 (IP allowlist), 429 (rate),
 * 403 (scope). Repeated failures from one address throttle failures only: while
 * the address is throttled a valid key still authenticates, and anything else
 * gets 429 instead of 401, so a guesser learns nothing more than a valid key
 * would tell it anyway (keys carry 238 random bits; the throttle bounds work
 * and noise, it is not what makes a key unguessable).
 *
 * Without an Authorization header, a console session cookie authenticates
 * instead (users/session-auth.ts); with both, the key decides.
 */
import type { Context } from 'koa';
import type { Clock } from '../clock';
import type { Config } from '../config';
import type { Db } from '../db';
import { ApiError } from '../http/errors';
import type { Caller, RequestState } from '../http/context';
import { getAccount } from './accounts';
import { isAllowed } from './allowlist';
import { findKeyBySecret, looksLikeKey, touchKey, ApiKey } from './keys';
import { AuthFailureLimiter, BucketState, TokenBuckets } from './rate-limit';
import type { Scope } from './scopes';
import type { SecuritySettings } from './settings';
import { hasSessionCookie, sessionCaller } from '../users/session-auth';

const unauthorized = (code: string, message: string) =>
  new ApiError(401, 'authentication_error', code, message, undefined, undefined, { 'WWW-Authenticate': 'Bearer' });

export interface AuthDeps {
  db: Db;
  clock: Clock;
  config: Config;
  settings: SecuritySettings;
  buckets: TokenBuckets;
  failures: AuthFailureLimiter;
}

/** Checks a key secret; shared by the API and SMTP AUTH. Returns the key or why not. */
export async function verifySecret(deps: AuthDeps, secret: string): Promise<ApiKey | ApiError> {
  if (!looksLikeKey(secret)) return unauthorized('malformed_api_key', 'API key is malformed: expected svc_test_… or svc_live_…');
  const key = await findKeyBySecret(deps.db, secret);
  if (!key) return unauthorized('invalid_api_key', 'API key is not valid');
  if (key.revokedAt !== null) return unauthorized('revoked_api_key', 'API key has been revoked');
  return key;
}

export function rateLimitHeaders(state: BucketState): Record<string, string> {
  return {
    'RateLimit-Policy': `"per-key";q=${state.limit};w=${state.windowSeconds}`,
    RateLimit: `"per-key";r=${state.remaining};t=${state.resetSeconds}`,
  };
}

/** Where a request carries its key: `Authorization: Bearer` by default; a compatibility layer may name another header. */
export type SecretOf = (ctx: Context) => string | undefined;
export const bearerSecret: SecretOf = (ctx) => bearerToken(ctx.get('authorization'));

/**
 * `allowSession`: whether a console session cookie may stand in for a key. Only the /v1 API allows it; the
 * compatibility layers (some read the same Bearer header) are for API keys alone.
 */
export function createAuthenticator(deps: AuthDeps, secretOf: SecretOf = bearerSecret, options: { allowSession?: boolean } = {}) {
  const allowSession = options.allowSession ?? secretOf === bearerSecret;
  return async function authenticate(ctx: Context, scope: Scope): Promise<Caller> {
    const state = ctx.state as RequestState;
    const secret = secretOf(ctx);
    if (secret === undefined && allowSession && hasSessionCookie(ctx)) return withScope(await sessionCaller(deps, ctx), scope);
    const key = secret === undefined ? unauthorized('missing_api_key', 'Authorization: Bearer <API key> is required') : await verifySecret(deps, secret);
    if (key instanceof ApiError) {
      const blocked = deps.failures.blockedFor(state.clientIp);
      if (blocked) throw tooManyFailures(blocked);
      if (secret !== undefined) deps.failures.recordFailure(state.clientIp);
      throw key;
    }
    const account = await getAccount(deps.db, key.accountId);
    if (!account) throw unauthorized('invalid_api_key', 'API key is not valid');
    if (!isAllowed(await deps.settings.allowedIps(account.id), state.clientIp)) {
      throw new ApiError(403, 'permission_error', 'ip_not_allowed', `requests from ${state.clientIp} are not in this account's IP allowlist`);
    }
    const bucket = deps.buckets.take(key.id);
    ctx.set(rateLimitHeaders(bucket));
    if (!bucket.allowed) {
      throw new ApiError(429, 'rate_limit_error', 'rate_limited', 'too many requests for this API key', undefined, undefined, {
        'Retry-After': String(bucket.retryAfterSeconds),
      });
    }
    if (!key.scopes.includes(scope)) {
      throw new ApiError(403, 'permission_error', 'insufficient_scope', `this API key lacks the scope '${scope}'`, scope);
    }
    void touchKey(deps.db, key, deps.clock.now()).catch(() => undefined);
    return { accountId: account.id, accountName: account.name, keyId: key.id, mode: key.mode, scopes: key.scopes };
  };
}

function withScope(caller: Caller, scope: Scope): Caller {
  if (!caller.scopes.includes(scope)) throw new ApiError(403, 'permission_error', 'insufficient_scope', `this caller lacks the scope '${scope}'`, scope);
  return caller;
}

function bearerToken(header: string): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : '';
}

function tooManyFailures(seconds: number): ApiError {
  return new ApiError(429, 'rate_limit_error', 'too_many_auth_failures', 'too many failed authentications from this address', undefined, undefined, {
    'Retry-After': String(seconds),
  });
}
