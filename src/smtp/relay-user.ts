/**
 * Who sends when a client did not AUTH: the key whose relay network holds the
 * client's address (src/auth/relay-networks.ts), or nobody. A client outside
 * every relay network gets 530 at MAIL FROM, on the submission port and the
 * relay listener alike, so neither is ever an open relay. What follows is the
 * authenticated path unchanged: checkSender (key still valid, allowlist, rate)
 * at each MAIL FROM, and the accept path's domain, DKIM, limit and mode rules.
 */
import type { AppDeps } from '../deps';
import { normalizeAddress } from '../auth/allowlist';
import { findKeyById } from '../auth/keys';
import { relayKeyFor } from '../auth/relay-networks';
import type { SubmitUser } from './auth';
import { smtpReply, type SmtpReply } from './replies';

const SCOPE = 'messages:send';

export async function relayUser(deps: AppDeps, remoteAddress: string, authOffered: boolean): Promise<SubmitUser | SmtpReply> {
  const clientIp = normalizeAddress(remoteAddress);
  const bound = await relayKeyFor(deps.db, clientIp);
  const key = bound && (await findKeyById(deps.db, bound.accountId, bound.keyId));
  if (!key || key.revokedAt !== null || !key.scopes.includes(SCOPE)) {
    const how = authOffered ? 'authenticate with an API key (AUTH) or relay' : 'relay';
    return smtpReply(530, '5.7.0', `Authentication required: ${clientIp} is not in a relay network of any API key; ${how} from a network bound to a key (pigeon keys create --relay-from)`);
  }
  return { keyId: key.id, accountId: key.accountId, mode: key.mode, relayNetwork: bound.network };
}
