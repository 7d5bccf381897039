/**
 * The SendGrid v3 layer (mounted at /sendgrid, or at / on
 * compat.sendgrid.port): POST /v3/mail/send. Each personalization is one
 * native send; they are committed together or not at all, as SendGrid
 * accepts or refuses a request whole. 202 with X-Message-Id (the first
 * message's id). `Authorization: Bearer` carries a Pigeon API key.
 */
import type { AppDeps } from '../../deps';
import { bearerSecret } from '../../auth/authenticate';
import type { Caller } from '../../http/context';
import type { CompatLayer, CompatReply, CompatRoute } from '../layer';
import { sendNative } from '../native';
import { sendgridError, sendgridFault, sendgridStatus } from './errors';
import { fromSendgrid } from './translate';

async function mailSend(deps: AppDeps, caller: Caller, body: unknown): Promise<CompatReply> {
  const natives = await fromSendgrid(deps, caller, body);
  const results = (await sendNative(deps, caller, natives, { allOrNothing: true, caller: 'sendgrid' })).data;
  const failed = results.flatMap((r, i) => (r.status === 'failed' ? [{ i, error: r.error }] : []));
  if (failed.length) {
    const prefix = natives.length > 1 ? (i: number) => `personalizations[${i}].` : () => '';
    return { status: sendgridStatus(failed[0].error), body: { errors: failed.map((f) => sendgridFault(f.error, prefix(f.i))) } };
  }
  const first = results[0];
  return { status: 202, headers: first.status === 'accepted' ? { 'X-Message-Id': first.messages[0].id } : undefined };
}

function routes(deps: AppDeps): CompatRoute[] {
  return [{ method: 'post', path: '/v3/mail/send', scope: 'messages:send', body: true, handler: ({ caller, body }) => mailSend(deps, caller, body) }];
}

export const sendgridLayer: CompatLayer = { name: 'sendgrid', secretOf: bearerSecret, toProviderError: sendgridError, routes };
