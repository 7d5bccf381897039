/**
 * SMTP AUTH with an API key as the password (the user name is free; the docs
 * say `apikey`). The checks and their order are the API's: the key (malformed,
 * unknown, revoked), the account's IP allowlist (the API's `isAllowed`), and
 * the `messages:send` scope. Only bad keys count as failures, as on the API,
 * and only failures are throttled: a valid key logs in from a throttled
 * address, a bad one gets 454 and the connection closes.
 * The session keeps the key's id and account, never the key itself.
 */
import type { AppDeps } from '../deps';
import { ApiError } from '../http/errors';
import { getAccount } from '../auth/accounts';
import { isAllowed, normalizeAddress } from '../auth/allowlist';
import { verifySecret } from '../auth/authenticate';
import { findKeyById, touchKey } from '../auth/keys';
import type { Mode } from '../auth/scopes';
import { smtpReply, SmtpReply } from './replies';

/** What an authenticated session carries (session.user). */
export interface SubmitUser {
  keyId: string;
  accountId: string;
  mode: Mode;
  /** Set when the client did not AUTH and relays from this network of the key (relay-user.ts). */
  relayNetwork?: string;
}

export type LoginResult = { user: SubmitUser } | { refused: SmtpReply; disconnect: boolean };

const SCOPE = 'messages:send';

function blocked(seconds: number): LoginResult {
  return { refused: smtpReply(454, '4.7.0', `Too many failed authentications from this address; try again in ${seconds} s`), disconnect: true };
}

export async function login(deps: AppDeps, password: string, clientIp: string): Promise<LoginResult> {
  const key = await verifySecret(deps, password.trim());
  const account = key instanceof ApiError ? undefined : await getAccount(deps.db, key.accountId);
  if (key instanceof ApiError || !account) {
    const wait = deps.failures.blockedFor(clientIp);
    if (wait) return blocked(wait);
    deps.failures.recordFailure(clientIp);
    const after = deps.failures.blockedFor(clientIp);
    if (after) return blocked(after);
    const why = key instanceof ApiError ? key.message : 'API key is not valid';
    return { refused: smtpReply(535, '5.7.8', `Authentication failed: ${why} (the password is an API key)`), disconnect: false };
  }
  if (!isAllowed(await deps.settings.allowedIps(account.id), clientIp)) {
    return { refused: smtpReply(535, '5.7.1', `Connections from ${clientIp} are not in this account's IP allowlist`), disconnect: false };
  }
  if (!key.scopes.includes(SCOPE)) {
    return { refused: smtpReply(535, '5.7.1', `This API key lacks the scope '${SCOPE}'`), disconnect: false };
  }
  void touchKey(deps.db, key, deps.clock.now()).catch(() => undefined);
  return { user: { keyId: key.id, accountId: account.id, mode: key.mode } };
}

/**
 * Checked at each MAIL FROM: a key revoked or an address removed from the
 * allowlist during a long session stops sending at the next message, and
 * the key's rate limit applies per message.
 */
export async function checkSender(deps: AppDeps, user: SubmitUser, remoteAddress: string): Promise<SmtpReply | null> {
  const key = await findKeyById(deps.db, user.accountId, user.keyId);
  if (!key || key.revokedAt !== null) return smtpReply(530, '5.7.0', 'API key has been revoked; authenticate with a valid key');
  // The allowlist may have changed since AUTH: a long session must not outlive it.
  const clientIp = normalizeAddress(remoteAddress);
  if (!isAllowed(await deps.settings.allowedIps(user.accountId), clientIp)) {
    return smtpReply(530, '5.7.1', `Connections from ${clientIp} are not in this account's IP allowlist`);
  }
  const bucket = deps.buckets.take(key.id);
  if (!bucket.allowed) return smtpReply(451, '4.7.1', `Rate limit of this API key exceeded; try again in ${bucket.retryAfterSeconds} s`);
  return null;
}
