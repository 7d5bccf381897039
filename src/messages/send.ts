/**
 * The send service behind POST /v1/messages/send: idempotency claim →
 * prepare (validate, render, build MIME) → accept (one durable transaction
 * with the idempotency record) → the 202 body. A request that fails after
 * claiming its Idempotency-Key releases it, so the client may retry.
 */
import type { AppDeps } from '../deps';
import { acceptBatch, AcceptedMessage, statusOf } from './accept';
import { abandonIdempotent, beginIdempotent, completeIdempotent, requestHash } from './idempotency';
import { prepareSend, Sender } from './prepare';
import type { SendBody } from './schemas';

export interface SendResult {
  status: number;
  body: { data: AcceptedMessage[] };
  /** True when this is the stored answer to an earlier request with the same Idempotency-Key. */
  replayed: boolean;
}

export async function sendMessages(deps: AppDeps, sender: Sender, body: SendBody, idempotencyKey?: string): Promise<SendResult> {
  if (idempotencyKey === undefined) {
    const data = await acceptBatch(deps, await prepareSend(deps, sender, body));
    return { status: 202, body: { data }, replayed: false };
  }
  const scope = { ...sender, key: idempotencyKey };
  const begun = await beginIdempotent(deps.db, scope, requestHash(body), deps.clock.now());
  if (begun.kind === 'replay') return { status: begun.status, body: begun.body as SendResult['body'], replayed: true };
  try {
    const batch = await prepareSend(deps, sender, body);
    const status = statusOf(batch);
    const response = { data: batch.messages.map((m) => ({ id: m.id, to: m.toEmail, status })) };
    await acceptBatch(deps, batch, (trx) => completeIdempotent(trx, scope, 202, response));
    return { status: 202, body: response, replayed: false };
  } catch (err) {
    await abandonIdempotent(deps.db, scope).catch((e: unknown) => deps.log.warn({ err: e }, 'could not release an idempotency key'));
    throw err;
  }
}
