/**
 * Console sign-in: POST /v1/session makes a session (a new id every time),
 * GET tells the console who is signed in and its CSRF token, DELETE signs
 * out, and POST /v1/session/password spends a one-time set-password link.
 * These routes take no API key. A sign-in body must be JSON (415 otherwise),
 * which a cross-site form cannot send, so no other site can sign a browser in.
 */
import { z } from 'zod';
import type { AppDeps } from '../deps';
import type { ApiRouter } from '../http/api';
import { ApiError, unprocessable } from '../http/errors';
import type { RequestState } from '../http/context';
import { clearSessionCookie, setSessionCookie } from './cookie';
import { hashPassword, PASSWORD_MAX_LENGTH, verifyPassword } from './passwords';
import { accountsFor, checkCsrf, currentSession } from './session-auth';
import { createSession, deleteSession, sessionLimits, sweepSessions } from './sessions';
import { checkPasswordStrength } from './service';
import { shapeUser, userSchema } from './shape';
import { findUserByEmail, passwordTokenUsable, redeemPasswordToken } from './store';
import { SignInThrottle } from './throttle';

const TAG = 'Console session';
const signInBody = z.strictObject({
  email: z.string().trim().min(1).max(254),
  password: z.string().min(1).max(PASSWORD_MAX_LENGTH),
});
const sessionView = z.object({ user: userSchema, csrf_token: z.string().describe('Send it as X-CSRF-Token on every request other than GET/HEAD.') });

const invalidCredentials = () => new ApiError(401, 'authentication_error', 'invalid_credentials', 'email or password is wrong');

/** Password checks at once, all clients together: half of libuv's default pool of 4 stays free for SQLite. */
const MAX_HASHES_AT_ONCE = 2;

export function registerUserRoutes(api: ApiRouter, deps: AppDeps): void {
  const { db, clock, config } = deps;
  const throttle = new SignInThrottle(clock, config.console.signInMaxFailures, config.console.signInWindowMinutes * 60_000);
  let hashing = 0; // password checks running now, all clients together

  api.add({
    method: 'post', path: '/v1/session', scope: null, tag: TAG, extension: true,
    summary: 'Sign in to the console',
    description: 'Checks email and password and sets the `pigeon_session` cookie (HttpOnly, SameSite=Strict, Secure over TLS) to a new session. ' +
      '401 invalid_credentials for an unknown email and a wrong password alike. After console.signInMaxFailures attempts within ' +
      'console.signInWindowMinutes for one email from one client, or from one client, 429 too_many_sign_in_failures with Retry-After; ' +
      'with two password checks already running (all clients), 429 sign_in_busy with Retry-After: 1.',
    body: signInBody,
    responses: { 200: { description: 'Signed in', schema: sessionView } },
    async handler({ body, ctx }) {
      const { clientIp } = ctx.state as RequestState;
      const wait = throttle.blockedFor(body.email, clientIp);
      if (wait) throw new ApiError(429, 'rate_limit_error', 'too_many_sign_in_failures', 'too many failed sign-ins: wait and try again', undefined, undefined, { 'Retry-After': String(wait) });
      // A password hash takes ~32 MiB and a thread of libuv's small pool, which SQLite's driver needs too.
      if (hashing >= MAX_HASHES_AT_ONCE) throw new ApiError(429, 'rate_limit_error', 'sign_in_busy', 'too many sign-ins at once: try again in a moment', undefined, undefined, { 'Retry-After': '1' });
      throttle.recordFailure(body.email, clientIp); // counted before the hash: parallel guesses cannot all pass the check
      hashing++;
      let user: Awaited<ReturnType<typeof findUserByEmail>>;
      let ok: boolean;
      try {
        user = await findUserByEmail(db, body.email);
        // Hashes even for an unknown email, so both failures take as long.
        ok = await verifyPassword(body.password, user?.passwordHash ?? null);
      } finally {
        hashing--;
      }
      if (!user || !ok || user.disabled) throw invalidCredentials();
      throttle.recordSuccess(body.email, clientIp);
      await sweepSessions(db, clock.now(), sessionLimits(config)); // abandoned sessions go when someone signs in
      const { token, session } = await createSession(db, user.id, clock.now());
      setSessionCookie(ctx, config, token);
      return { status: 200, body: { user: await shapeUser(db, user), csrf_token: session.csrfToken } };
    },
  });

  api.add({
    method: 'get', path: '/v1/session', scope: null, tag: TAG, extension: true,
    summary: 'The signed-in console user',
    description: 'The user, the CSRF token to send with changes, and the accounts the user may act for (X-Pigeon-Account). 401 invalid_session when not signed in.',
    responses: { 200: { description: 'Signed in', schema: sessionView.extend({ accounts: z.array(z.string()) }) } },
    async handler({ ctx }) {
      const { session, user } = await currentSession(deps, ctx);
      return { status: 200, body: { user: await shapeUser(db, user), csrf_token: session.csrfToken, accounts: await accountsFor(deps, user) } };
    },
  });

  api.add({
    method: 'delete', path: '/v1/session', scope: null, tag: TAG, extension: true,
    summary: 'Sign out',
    description: 'Deletes the session and clears the cookie; needs X-CSRF-Token like every change.',
    responses: { 204: { description: 'Signed out' } },
    async handler({ ctx }) {
      const { session } = await currentSession(deps, ctx);
      checkCsrf(ctx, session);
      await deleteSession(db, session.tokenHash);
      clearSessionCookie(ctx, config);
      return { status: 204 };
    },
  });

  api.add({
    method: 'post', path: '/v1/session/password', scope: null, tag: TAG, extension: true,
    summary: 'Set a password with a one-time link',
    description: 'Spends the token of a set-password link (`/#/set-password/<token>`, from `pigeon users create` or POST /v1/operator/users): ' +
      'it works once, within 24 hours. Sets the password (at least 12 characters) and ends the user\'s sessions. 422 invalid_token otherwise.',
    body: z.strictObject({ token: z.string().min(1).max(100), password: z.string().max(PASSWORD_MAX_LENGTH) }),
    responses: { 204: { description: 'Password set; sign in with it' } },
    async handler({ body }) {
      checkPasswordStrength(body.password);
      // Checked before hashing, so a made-up token costs a lookup, not a hash.
      if (!(await passwordTokenUsable(db, body.token, clock.now())) ||
          !(await redeemPasswordToken(db, body.token, await hashPassword(body.password), clock.now()))) {
        throw unprocessable('invalid_token', 'this link is unknown, used or expired: ask an admin for a new one', 'token');
      }
      return { status: 204 };
    },
  });
}
