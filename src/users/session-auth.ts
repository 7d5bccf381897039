/**
 * A console session as an API caller. The cookie names a session, the session
 * a user; the user acts for one account at a time (a member for their own, an
 * admin for the one named by X-Pigeon-Account, else their home account, else
 * the first account) with every scope, in live mode (or sandbox mode when the
 * request says `X-Pigeon-Mode: test`), so every /v1 route treats it exactly
 * like a key of that account and mode. Requests that change
 * anything must echo the session's CSRF token in X-CSRF-Token.
 */
import type { Context } from 'koa';
import type { AppDeps } from '../deps';
import { Account, findAccountByName, getAccount } from '../auth/accounts';
import { isAllowed } from '../auth/allowlist';
import { SCOPES } from '../auth/scopes';
import { ApiError } from '../http/errors';
import type { Caller, RequestState } from '../http/context';
import { csrfMatches, findSession, Session, SESSION_COOKIE, sessionLimits } from './sessions';
import { getUser, User } from './store';

export const ACCOUNT_HEADER = 'x-pigeon-account';
export const CSRF_HEADER = 'x-csrf-token';
/** `test` makes a session request a sandbox caller (the console's sandbox view); absent or `live`: live. */
export const MODE_HEADER = 'x-pigeon-mode';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** Accounts listed for an admin's account switcher at most. */
const ACCOUNTS_LISTED_MAX = 1000;

export type SessionDeps = Pick<AppDeps, 'db' | 'clock' | 'config' | 'settings' | 'buckets' | 'failures'>;

const invalidSession = () =>
  new ApiError(401, 'authentication_error', 'invalid_session', 'not signed in, or the session has ended: sign in again');
const forbidden = (code: string, message: string, param?: string) => new ApiError(403, 'permission_error', code, message, param);

export function hasSessionCookie(ctx: Context): boolean {
  return Boolean(ctx.cookies.get(SESSION_COOKIE));
}

/** The signed-in session and user behind the request's cookie, or 401. */
export async function currentSession(deps: SessionDeps, ctx: Context): Promise<{ session: Session; user: User }> {
  const token = ctx.cookies.get(SESSION_COOKIE) ?? '';
  const session = token ? await findSession(deps.db, token, deps.clock.now(), sessionLimits(deps.config)) : undefined;
  const user = session && (await getUser(deps.db, session.userId));
  if (!session || !user || user.disabled) throw invalidSession();
  return { session, user };
}

/** 403 csrf_failed unless a state-changing request carries the session's CSRF token. */
export function checkCsrf(ctx: Context, session: Session): void {
  if (SAFE_METHODS.has(ctx.method)) return;
  if (!csrfMatches(session, ctx.get(CSRF_HEADER))) {
    throw forbidden('csrf_failed', 'this request changes something, so it needs the X-CSRF-Token header from GET /v1/session');
  }
}

/** The caller a session request acts as: a live key with every scope, for one account. */
export async function sessionCaller(deps: SessionDeps, ctx: Context): Promise<Caller> {
  const state = ctx.state as RequestState;
  let found: { session: Session; user: User };
  try {
    found = await currentSession(deps, ctx);
  } catch (err) {
    // Session ids carry 256 random bits; counting failures bounds lookups, as for keys.
    const blocked = deps.failures.blockedFor(state.clientIp);
    if (blocked) throw new ApiError(429, 'rate_limit_error', 'too_many_auth_failures', 'too many failed authentications from this address', undefined, undefined, { 'Retry-After': String(blocked) });
    deps.failures.recordFailure(state.clientIp);
    throw err;
  }
  checkCsrf(ctx, found.session);
  const { user } = found;
  const account = await actingAccount(deps, user, ctx.get(ACCOUNT_HEADER));
  // The allowlist is the tenant's rule for its own callers; admins are the operator and are not bound by it.
  if (user.role === 'member' && !isAllowed(await deps.settings.allowedIps(account.id), state.clientIp)) {
    throw forbidden('ip_not_allowed', `requests from ${state.clientIp} are not in this account's IP allowlist`);
  }
  const bucket = deps.buckets.take(user.id);
  if (!bucket.allowed) {
    throw new ApiError(429, 'rate_limit_error', 'rate_limited', 'too many requests for this session', undefined, undefined, { 'Retry-After': String(bucket.retryAfterSeconds) });
  }
  return {
    accountId: account.id, accountName: account.name, keyId: user.id, mode: sessionMode(ctx.get(MODE_HEADER)), scopes: [...SCOPES],
    user: { id: user.id, email: user.email, role: user.role },
  };
}

/**
 * The mode a session request acts in. A sandbox session is what a sandbox key is (live-only routes refuse it,
 * it sees only sandbox messages and webhooks), so asking for it never widens what the user may do.
 */
function sessionMode(header: string): 'live' | 'test' {
  if (header === '' || header === 'live') return 'live';
  if (header === 'test') return 'test';
  throw new ApiError(400, 'invalid_request_error', 'invalid_mode', 'X-Pigeon-Mode is `live` or `test`', MODE_HEADER);
}

/** The account a user acts for: 403 for a member naming another account, 404 for an unknown name. */
export async function actingAccount(deps: Pick<SessionDeps, 'db'>, user: User, requested: string): Promise<Account> {
  if (user.role === 'member') {
    const own = user.accountId ? await getAccount(deps.db, user.accountId) : undefined;
    if (!own) throw forbidden('account_not_allowed', 'this user has no account');
    if (requested && requested !== own.name) throw forbidden('account_not_allowed', `this user may not act for account '${requested}'`, ACCOUNT_HEADER);
    return own;
  }
  if (requested) {
    const named = requested.length <= 200 ? await findAccountByName(deps.db, requested) : undefined;
    if (!named) throw new ApiError(404, 'not_found_error', 'account_not_found', `no account named '${requested.slice(0, 200)}'`, ACCOUNT_HEADER);
    return named;
  }
  const home = user.accountId ? await getAccount(deps.db, user.accountId) : undefined;
  if (home) return home;
  const first = await deps.db('accounts').orderBy('created_at').orderBy('id').first();
  if (!first) throw forbidden('account_not_allowed', 'there is no account yet');
  return { id: first.id, name: first.name, createdAt: Number(first.created_at) };
}

/** Names of the accounts a user may act for (the console's account switcher). */
export async function accountsFor(deps: Pick<SessionDeps, 'db'>, user: User): Promise<string[]> {
  if (user.role === 'member') {
    const own = user.accountId ? await getAccount(deps.db, user.accountId) : undefined;
    return own ? [own.name] : [];
  }
  const rows = await deps.db('accounts').select('name').orderBy('name').limit(ACCOUNTS_LISTED_MAX);
  return rows.map((r: { name: string }) => r.name);
}
